"""The weekly review's figures, read in a fixed handful of queries whatever the number of cases.

A week is an ISO week in the program's timezone (settings.TIME_ZONE, Asia/Tokyo): Monday 00:00 to the next
Monday 00:00. Figures are as of the end of the week, or now for the current week, and are rebuilt from the
append-only case history — so a past week's page keeps showing what was true then.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from django.db.models import OuterRef, Prefetch, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from portal.periods import iso_week, week_bounds
from tenants.models import Organization, Program
from workloads.records.models import Workload, WorkloadChange
from workloads.review.models import ActionItem, ReviewMeeting
from workloads.support.models import CaseEvent, SupportCase
from workloads.training.models import TrainingRun
from workloads.training.program import AtRisk, OrgTraining, organizations_week, training_at_risk
from workloads.usage.models import UsageDay
from workloads.usage.reports import Figures, summed

STALE_AFTER = timedelta(days=7)
ACTIVE = [str(s) for s in SupportCase.ACTIVE_STATUSES]
DONE = [str(s) for s in SupportCase.DONE_STATUSES]


@dataclass
class WorkloadWeek:
    workload: Workload
    created: bool = False
    fields: list[str] = field(default_factory=list)  # verbose names of the fields changed
    actors: list[str] = field(default_factory=list)


@dataclass
class OrgWeek:
    organization: Organization
    open_cases: list[SupportCase] = field(default_factory=list)
    stale_cases: list[SupportCase] = field(default_factory=list)
    opened: list[SupportCase] = field(default_factory=list)
    resolved: list[SupportCase] = field(default_factory=list)
    workloads: list[WorkloadWeek] = field(default_factory=list)
    action_items: list[ActionItem] = field(default_factory=list)
    usage: Figures = field(default_factory=Figures)  # the week's allocated and running instance-time
    usage_before: Figures = field(default_factory=Figures)  # the week before, to compare
    idle: bool = False
    training: OrgTraining = field(default_factory=OrgTraining)  # MFU and goodput of its runs in the week
    at_risk: list[AtRisk] = field(default_factory=list)  # its training projected to miss its plan

    @property
    def utilization_change(self):
        now, before = self.usage.utilization, self.usage_before.utilization
        return None if now is None or before is None else now - before

    @property
    def counts(self) -> dict[str, int]:
        """The table's counts, as numbers to sort by (workloads/review/tables.py)."""
        names = ("open_cases", "stale_cases", "opened", "resolved", "workloads", "at_risk")
        return {**{name: len(getattr(self, name)) for name in names}, "action_items": len(self.open_action_items)}

    @property
    def open_action_items(self) -> list[ActionItem]:
        return [item for item in self.action_items if item.status == ActionItem.Status.OPEN]

    @property
    def is_quiet(self) -> bool:
        return not (self.open_cases or self.opened or self.resolved or self.workloads or self.action_items
                    or self.at_risk or self.training.reporting)  # fmt: skip


@dataclass
class WeekReview:
    week_start: date
    starts_at: datetime
    ends_at: datetime
    as_of: datetime
    organizations: list[OrgWeek]
    meeting: ReviewMeeting | None
    action_items: list[ActionItem]  # this week's meeting's
    carried_forward: list[ActionItem]  # earlier meetings' items still open at the start of the week

    @property
    def iso_week(self) -> str:
        return iso_week(self.week_start)

    @property
    def is_current(self) -> bool:
        return self.starts_at <= self.as_of < self.ends_at

    def total(self, attribute: str) -> int:
        return sum(len(getattr(row, attribute)) for row in self.organizations)

    @property
    def usage_total(self) -> Figures:
        """Every organization's week together: the table's footer (summed from the same rows, never rescanned)."""
        total = Figures()
        for row in self.organizations:
            total.add(row.usage)
        return total

    @property
    def totals(self) -> dict[str, int]:
        names = ("open_cases", "stale_cases", "opened", "resolved", "workloads", "at_risk")
        return {name: self.total(name) for name in names}


def _history_before(moment: datetime) -> QuerySet[CaseEvent]:
    return CaseEvent.objects.filter(case=OuterRef("pk"), created_at__lt=moment).order_by("-created_at", "-pk")


def _status_at(moment: datetime) -> Coalesce:
    """A case's status at `moment`, rebuilt from its history (a case starts open)."""
    last_change = _history_before(moment).filter(kind=CaseEvent.Kind.STATUS_CHANGED).values("new_value")[:1]
    return Coalesce(Subquery(last_change), Value(str(SupportCase.Status.OPEN)))


def cases_open_at(moment: datetime, organizations: QuerySet[Organization]) -> QuerySet[SupportCase]:
    """Cases open at `moment` (status then, rebuilt from the history), each with `last_update`: its last
    entry a tenant can see before `moment` (internal notes do not count as an update)."""
    last_update = _history_before(moment).filter(internal=False).values("created_at")[:1]
    return (
        SupportCase.objects.filter(organization__in=organizations, created_at__lt=moment)
        # Done since before `moment` and never reopened: cannot have been open then (keeps the scan small).
        .exclude(status__in=DONE, resolved_at__lt=moment)
        .annotate(status_then=_status_at(moment))
        .annotate(last_update=Subquery(last_update))
        .filter(status_then__in=ACTIVE)
        .select_related("organization", "assignee")
        .order_by("severity", "created_at", "pk")
    )


def build_week(*, week_start: date, organizations: QuerySet[Organization]) -> WeekReview:
    starts_at, ends_at = week_bounds(week_start)
    as_of = min(timezone.now(), ends_at)
    orgs = list(organizations.select_related("lead_engineer").order_by("name"))
    rows = {org.pk: OrgWeek(organization=org) for org in orgs}

    for case in cases_open_at(as_of, organizations):
        row = rows[case.organization_id]
        row.open_cases.append(case)
        if case.last_update is None or case.last_update < as_of - STALE_AFTER:
            row.stale_cases.append(case)

    in_week = Q(created_at__gte=starts_at, created_at__lt=as_of)
    cases = SupportCase.objects.filter(organization__in=organizations).select_related("organization", "assignee")
    for case in cases.filter(in_week).order_by("created_at", "pk"):
        rows[case.organization_id].opened.append(case)
    # Resolved this week: moved from an active status to resolved or closed during the week, and still done
    # at its end (one reopened since is open, not resolved).
    resolutions = CaseEvent.objects.filter(
        in_week, kind=CaseEvent.Kind.STATUS_CHANGED, old_value__in=ACTIVE, new_value__in=DONE
    ).values("case_id")
    resolved = cases.filter(pk__in=Subquery(resolutions)).annotate(status_then=_status_at(as_of))
    for case in resolved.filter(status_then__in=DONE).order_by("pk"):
        rows[case.organization_id].resolved.append(case)

    changes = (
        WorkloadChange.objects.filter(organization__in=organizations, changed_at__gte=starts_at, changed_at__lt=as_of)
        .select_related("workload", "actor")
        .order_by("changed_at", "pk")
    )
    by_workload: dict[int, WorkloadWeek] = {}
    for change in changes:
        entry = by_workload.get(change.workload_id)
        if entry is None:
            entry = by_workload[change.workload_id] = WorkloadWeek(workload=change.workload)
            rows[change.organization_id].workloads.append(entry)
        if change.kind == WorkloadChange.Kind.CREATED:
            entry.created = True
        elif (label := str(change.field_label)) not in entry.fields:
            entry.fields.append(label)
        if change.actor and (name := change.actor.get_username()) not in entry.actors:
            entry.actors.append(name)

    items = ActionItem.objects.select_related("owner", "case", "organization", "meeting")
    meeting = (
        ReviewMeeting.objects.filter(week_start=week_start)
        .prefetch_related(Prefetch("attendees"))
        .select_related("created_by")
        .first()
    )
    action_items = list(items.filter(meeting=meeting)) if meeting else []
    # Carried forward: earlier weeks' items that were still open when this week began.
    carried = list(
        items.filter(meeting__week_start__lt=week_start)
        .filter(Q(done_at__isnull=True) | Q(done_at__gte=starts_at))
        .order_by("meeting__week_start", "created_at", "pk")
    )
    for item in [*carried, *action_items]:
        if item.organization_id in rows:
            rows[item.organization_id].action_items.append(item)

    # Usage: the week's allocated against running instance-time per org (from the daily rollups), the week before,
    # and the program's idle flag — the weekly meeting's one page.
    usage_rows = UsageDay.objects.filter(organization__in=organizations)
    this_week = summed(
        usage_rows.filter(day__gte=week_start, day__lte=week_start + timedelta(days=6)), "organization_id"
    )
    before = week_start - timedelta(days=7)
    last_week = summed(usage_rows.filter(day__gte=before, day__lte=week_start - timedelta(days=1)), "organization_id")
    program = Program.objects.first()
    threshold = program.idle_threshold if program else None
    for org_id, row in rows.items():
        row.usage = this_week.get((org_id,), Figures())
        row.usage_before = last_week.get((org_id,), Figures())
        ratio = row.usage.utilization
        row.idle = threshold is not None and ratio is not None and ratio < threshold

    # Training: MFU and goodput in the week, and what is projected to miss its plan as of the week's end.
    training = organizations_week(rows, week=week_start, now=as_of)
    for item in training_at_risk(TrainingRun.objects.filter(organization__in=organizations), now=as_of):
        rows[item.workload.organization_id].at_risk.append(item)
    for org_id, row in rows.items():
        row.training = training.get(org_id) or OrgTraining()

    return WeekReview(
        week_start=week_start,
        starts_at=starts_at,
        ends_at=ends_at,
        as_of=as_of,
        organizations=list(rows.values()),
        meeting=meeting,
        action_items=action_items,
        carried_forward=carried,
    )
