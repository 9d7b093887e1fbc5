"""The program's week at a glance (the landing page, `/program/`): for the last closed week and this week so far,
utilization and cost by organization with the ones needing attention first, over-allocation, billed gaps on
settled days, MFU and goodput of each organization's training, training that will miss its plan, open S1/S2
cases, incidents, silent reporters, allocations ending or projected to end under-used, and requests waiting for
review.

Every part is a fixed number of queries whatever the number of organizations, allocations or days: sums are
grouped in the database, lists are cut to a few rows with a count of the rest.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, timedelta
from decimal import Decimal

from django.db.models import (
    Case,
    Count,
    Exists,
    F,
    FloatField,
    Func,
    IntegerField,
    OuterRef,
    Q,
    Subquery,
    Sum,
    Value,
    When,
    Window,
)
from django.db.models.functions import Cast
from django.db.models.lookups import LessThan

from tenants.access import visible_organizations
from tenants.models import Allocation, CapacityRequest, Organization, Program
from workloads.clusters.models import Cluster
from workloads.health.models import HealthEvent
from workloads.support.models import SupportCase
from workloads.training.models import TrainingRun
from workloads.training.program import AtRisk, OrgTraining, organizations_week, training_at_risk
from workloads.usage.allocations import AllocationUse, allocation_use
from workloads.usage.billed import (
    BilledCheck,
    SettledBilling,
    billed_off,
    billed_settled_through,
    week_summaries_settled,
)
from workloads.usage.definitions import RECENT_DAYS
from workloads.usage.models import BilledCost, RecentPoolUse, UsageDay, UsageWeek
from workloads.usage.periods import Period
from workloads.usage.reports import Figures

SHOWN = 12  # organizations listed per week; the rest are on the usage page, in the same order
LISTED = 6  # cases, incidents, allocations, requests listed before "and N more"
ENDING_DAYS = 14
PROJECTED_CANDIDATES = LISTED  # projected exactly (allocation_use loops over their days), the least used first


# The figures the week shows, summed per organization (and over every one) through the usage definitions.
WEEK_SUMS = ("allocated", "running", "allocated_cost", "running_cost", "idle_cost", "over_allocation",
             "over_allocation_cost")  # fmt: skip


def week_figures(row: dict, prefix: str = "") -> Figures:
    return Figures(**{name: row[prefix + name] or 0 for name in WEEK_SUMS})


class IdleAndOver:
    """Idle cost and over-allocation as the landing page names them, read from the `figures` (never computed
    beside them)."""

    figures: Figures

    @property
    def idle_cost(self) -> int:
        return self.figures.idle_cost

    @property
    def over(self) -> int:
        return self.figures.over_allocation

    @property
    def over_cost(self) -> int:
        return self.figures.over_allocation_cost


@dataclass
class OrgWeek(IdleAndOver):
    """One organization's week: its figures (idle and over-allocation per pool and day, neither netted against the
    other), and billed against computed cost over the days Cost Explorer has settled."""

    organization_id: int
    figures: Figures
    billed: BilledCheck | None = None
    idle: bool = False
    organization: Organization | None = None
    training: OrgTraining | None = None  # MFU and goodput of its runs in the week (workloads.training.program)


@dataclass
class WeekGlance(IdleAndOver):
    period: Period
    rows: list[OrgWeek]  # the SHOWN needing attention most
    figures: Figures  # every organization's
    organizations: int  # how many have usage rows in the week
    idle: int
    over_orgs: int
    billed_off: int  # organizations whose billed cost differs over the settled days
    settled_through: date | None  # the last day Cost Explorer has billed in the week

    @property
    def more(self) -> int:
        return max(self.organizations - len(self.rows), 0)


def per_org_week(rows, *, threshold: Decimal):
    """The week's summaries, one per organization (UsageWeek: the daily rows' ROW_SUMS, idle and over-allocation
    per pool and day floored, then summed; neither netted against the other), with the flags the page orders by —
    in the database, so ranking 2,000 organizations returns a dozen rows and counting them one row."""
    idle_p, idle_q = threshold.as_integer_ratio()  # running ÷ allocated < threshold, as integers (as the pages)
    return rows.values("organization_id", *WEEK_SUMS, "billed", "billed_computed").annotate(
        ratio=Case(
            When(allocated__gt=0, then=Cast("running", FloatField()) / Cast("allocated", FloatField())),
            default=Value(None),
            output_field=FloatField(),
        ),
        is_idle=Case(
            When(Q(allocated__gt=0) & LessThan(F("running") * idle_q, F("allocated") * idle_p), then=Value(1)),
            default=Value(0),
        ),
        is_over=Case(When(over_allocation__gt=0, then=Value(1)), default=Value(0)),
    )


def week_glance(*, period: Period, week_rows, usage_rows, billed_rows, threshold: Decimal) -> WeekGlance:
    """The week in a few queries whatever the number of organizations: the last billed day, the SHOWN needing
    attention most (idle first, then over-running, then the least used) with the totals and counts over every
    organization, and billed and computed cost over the settled days (from the week's summaries when they hold
    it). `week_rows`: the week summaries the reader may see, `usage_rows` the daily rows (the settled days are part
    of the week)."""
    rows = usage_rows.filter(day__gte=period.first, day__lte=period.last).order_by()
    settled = billed_settled_through(period)  # one day for the program: the usage pages' own
    grouped = per_org_week(week_rows.filter(week=period.first).order_by(), threshold=threshold)
    # The totals and counts over every organization ride on each row shown (window sums over the whole week): one
    # read of the week's 2,000 rows, not two.
    everyone = Window(Count("organization_id"))
    totals = {f"all_{name}": Window(Sum(name)) for name in WEEK_SUMS}
    off = Case(When(billed_off("billed", "billed_computed"), then=Value(1)), default=Value(0))
    top = list(
        grouped.annotate(
            all_organizations=everyone,
            all_idle=Window(Sum("is_idle")),
            all_over_orgs=Window(Sum("is_over")),
            all_billed_off=Window(Sum(off)),
            **totals,
        ).order_by(
            F("is_idle").desc(),
            F("is_over").desc(),
            F("ratio").asc(nulls_last=True),
            F("over_allocation_cost").desc(),
            "organization_id",
        )[:SHOWN]
    )
    counts = top[0] if top else {}
    # Billed against computed over the settled days: from the week's summaries when they hold it as of `settled`
    # (counted with the rest above); otherwise every organization's from the daily rows, in one read of each side.
    checks: dict[int, BilledCheck] = {}
    billed_apart = 0
    if week_summaries_settled(period.first, settled):
        checks = {
            row["organization_id"]: BilledCheck(row["billed"], row["billed_computed"], settled)
            for row in top
            if row["billed"] is not None
        }
        billed_apart = counts.get("all_billed_off") or 0
    elif settled:
        every = SettledBilling(billed_rows=billed_rows, usage_rows=rows, first=period.first, through=settled)
        checks, billed_apart = every.checks, every.off_count()
    shown = [
        OrgWeek(
            row["organization_id"],
            week_figures(row),
            billed=checks.get(row["organization_id"]),
            idle=bool(row["is_idle"]),
        )
        for row in top
    ]
    return WeekGlance(
        period=period,
        rows=shown,
        figures=week_figures({name: counts.get(name) for name in (f"all_{n}" for n in WEEK_SUMS)}, prefix="all_"),
        organizations=counts.get("all_organizations") or 0,
        idle=counts.get("all_idle") or 0,
        over_orgs=counts.get("all_over_orgs") or 0,
        billed_off=billed_apart,
        settled_through=settled,
    )


def add_training(weeks: list[WeekGlance], *, as_of) -> None:
    """Each shown organization's MFU and goodput in its week: a fixed number of reads per week."""
    for week in weeks:
        training = organizations_week([row.organization_id for row in week.rows], week=week.period.first, now=as_of)
        for row in week.rows:
            row.training = training.get(row.organization_id)


def name_rows(weeks: list[WeekGlance], organizations) -> None:
    """Put the organization on the rows shown, in one query for every week."""
    ids = {row.organization_id for week in weeks for row in week.rows}
    found = organizations.only("name", "slug").in_bulk(ids)
    for week in weeks:
        week.rows = [row for row in week.rows if row.organization_id in found]
        for row in week.rows:
            row.organization = found[row.organization_id]


@dataclass
class Listing:
    """A few rows of something and how many there are in all."""

    items: list
    count: int

    @property
    def more(self) -> int:
        return max(self.count - len(self.items), 0)


def listing(queryset, limit: int = LISTED) -> Listing:
    """One query, however many there are: the first rows read in the order of an index, and how many in all
    counted once beside them (a scalar subquery; a window count would join and sort every row to list six)."""
    every = queryset.order_by().annotate(counted=Func(F("pk"), function="COUNT", output_field=IntegerField()))
    items = list(queryset.annotate(listed_of=Subquery(every.values("counted")))[:limit])
    return Listing(items, items[0].listed_of if items else 0)


@dataclass
class Glance:
    program: Program | None
    weeks: list[WeekGlance]
    cases: Listing
    incidents: Listing
    suspect: Listing
    silent: Listing
    ending: Listing
    underused: list[AllocationUse] = field(default_factory=list)
    requests: Listing = field(default_factory=lambda: Listing([], 0))
    threshold: Decimal = Decimal("0.5")
    at_risk: list[AtRisk] = field(default_factory=list)  # training that will not reach its plan in time

    @property
    def at_risk_shown(self) -> list[AtRisk]:
        return self.at_risk[:LISTED]


def underused_allocations(allocations, recent_rows, *, today: date, threshold: Decimal, as_of) -> list[AllocationUse]:
    """Active allocations projected, at the last 7 days' rate, to end with less than `threshold` of their
    instance-hours used. The candidates are the active ones whose organization ran least of the pool over its last
    7 days summed (RecentPoolUse: the days up to its last rollup) and under the threshold; the projection itself is
    allocation_use's, over the daily rows, for at most PROJECTED_CANDIDATES of them."""
    active = allocations.filter(status=Allocation.Status.ACTIVE, starts_on__lte=today, ends_on__gt=today)
    below_p, below_q = threshold.as_integer_ratio()  # running ÷ allocated < threshold, compared as integers
    held = active.filter(organization_id=OuterRef("organization_id"), pool_id=OuterRef("pool_id"))
    low = (
        recent_rows.filter(through__gt=today - timedelta(days=RECENT_DAYS), allocated__gt=0)
        .filter(LessThan(F("running") * below_q, F("allocated") * below_p), Exists(held))
        .order_by(Cast("running", FloatField()) / Cast("allocated", FloatField()), "organization_id", "pool_id")
        .values_list("organization_id", "pool_id")[:PROJECTED_CANDIDATES]
    )
    pairs = Q()
    for org_id, pool_id in low:
        pairs |= Q(organization_id=org_id, pool_id=pool_id)
    if not pairs:
        return []
    candidates = list(active.filter(pairs).select_related("organization", "pool__instance_type"))
    uses = allocation_use(candidates, as_of=as_of).values()
    found = [u for u in uses if u.projected_share is not None and u.projected_share < threshold]
    return sorted(found, key=lambda u: u.projected_share)[:LISTED]


def glance(*, user, program: Program | None, weeks: list[Period], today: date, as_of) -> Glance:
    """Everything the landing page shows, in a bounded number of queries."""
    threshold = program.idle_threshold if program else Decimal("0.5")
    usage_rows = UsageDay.objects.visible_to(user)
    billed_rows = BilledCost.objects.visible_to(user)
    week_rows = UsageWeek.objects.visible_to(user)
    week_glances = [
        week_glance(period=p, week_rows=week_rows, usage_rows=usage_rows, billed_rows=billed_rows, threshold=threshold)
        for p in weeks
    ]
    name_rows(week_glances, visible_organizations(user))
    add_training(week_glances, as_of=as_of)
    cases = (
        SupportCase.objects.visible_to(user)
        .filter(status__in=SupportCase.ACTIVE_STATUSES, severity__in=[SupportCase.Severity.S1, SupportCase.Severity.S2])
        .select_related("organization")
        .order_by("severity", "created_at", "pk")
    )
    incidents = (
        HealthEvent.objects.visible_to(user)
        .filter(resolved_at=None, severity=HealthEvent.Severity.CRITICAL)
        .select_related("organization", "cluster", "case")
        .order_by("observed_at", "pk")
    )
    live = Cluster.objects.visible_to(user).exclude(status=Cluster.Status.DELETED).select_related("organization")
    allocations = Allocation.objects.visible_to(user)
    ending = (
        allocations.filter(
            status=Allocation.Status.ACTIVE, ends_on__gte=today, ends_on__lte=today + timedelta(days=ENDING_DAYS)
        )
        .select_related("organization", "pool__instance_type")
        .order_by("ends_on", "pk")
    )
    requests = (
        CapacityRequest.objects.visible_to(user)
        .filter(status=CapacityRequest.Status.SUBMITTED)
        .select_related("organization", "pool__instance_type")
        .order_by("submitted_at", "pk")
    )
    return Glance(
        program=program,
        weeks=week_glances,
        cases=listing(cases),
        incidents=listing(incidents),
        suspect=listing(live.exclude(interconnect_suspect_since=None).order_by("interconnect_suspect_since", "pk")),
        silent=listing(live.exclude(reporter_silent_since=None).order_by("reporter_silent_since", "pk")),
        ending=listing(ending),
        underused=underused_allocations(
            allocations, RecentPoolUse.objects.visible_to(user), today=today, threshold=threshold, as_of=as_of
        ),
        requests=listing(requests),
        threshold=threshold,
        at_risk=training_at_risk(TrainingRun.objects.visible_to(user), now=as_of),
    )
