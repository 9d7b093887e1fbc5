"""What a report says, section by section, as plain rows of typed values: the XLSX writes them as numbers, the PDF
prints them as the pages do. Every figure comes from the function the page showing it calls, for the same period:

- use against allocation: workloads.usage.reports (the program usage table, or an organization's pools), the
  period's figures and the billed check over the days Cost Explorer settled;
- cost against budget: workloads.outcomes.budget (spent to date and the forecast, as of the report's moment);
- milestones: workloads.outcomes.milestones; deliverables released in the period;
- incidents and their time to repair: workloads.health.repair, observed in the period;
- training progress: workloads.training.program (tokens against plan, MFU, the finish date).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from decimal import Decimal

from django.utils import timezone
from django.utils.translation import gettext as _

from portal.periods import day_start
from tenants.models import Organization, Program
from workloads.health.repair import repairs_by_organization
from workloads.outcomes.budget import Standing, standings
from workloads.outcomes.milestones import milestone_states
from workloads.outcomes.models import Deliverable, Milestone
from workloads.training.program import organization_training
from workloads.usage.definitions import hours, usd
from workloads.usage.formats import local_value
from workloads.usage.periods import Period
from workloads.usage.reports import Figures, billed_check, org_report, program_report

# How a column's values read: the XLSX's number format, the PDF's text.
TEXT, COUNT, HOURS, USD, LOCAL, SHARE, DAY, DECIMAL = (
    "text",
    "count",
    "hours",
    "usd",
    "local",
    "share",
    "day",
    "decimal",
)


@dataclass
class Column:
    label: str
    kind: str = TEXT


@dataclass
class Section:
    key: str
    title: str
    columns: list[Column]
    rows: list[list] = field(default_factory=list)
    total: list | None = None
    note: str = ""


@dataclass
class Content:
    title: str
    program: Program
    organization: Organization | None
    period: Period
    as_of: datetime
    currency: str
    sections: list[Section]


def _hours(microseconds: int | None) -> Decimal | None:
    return None if microseconds is None else hours(microseconds)


def _usd(micro: int | None) -> Decimal | None:
    return None if micro is None else usd(micro)


def usage_section(program: Program, organization: Organization | None, period: Period, as_of: datetime) -> Section:
    columns = [
        Column(_("Organization") if organization is None else _("Instance type")),
        Column(_("Allocated instance-hours"), HOURS),
        Column(_("Running instance-hours"), HOURS),
        Column(_("Utilization"), SHARE),
        Column(_("Allocated accelerator-hours"), HOURS),
        Column(_("Running accelerator-hours"), HOURS),
        Column(_("Allocated cost (USD)"), USD),
        Column(_("Running cost (USD)"), USD),
        Column(_("Idle cost (USD)"), USD),
        Column(_("Over-allocation instance-hours"), HOURS),
        Column(_("Billed (USD)"), USD),
    ]

    def cells(name: str, f: Figures, billed: int | None) -> list:
        return [
            name, _hours(f.allocated), _hours(f.running), f.utilization, _hours(f.allocated_accelerators),
            _hours(f.running_accelerators), _usd(f.allocated_cost), _usd(f.running_cost), _usd(f.idle_cost),
            _hours(f.over_allocation), _usd(billed),
        ]  # fmt: skip

    section = Section("usage", _("Use against allocation"), columns)
    if organization is None:
        report = program_report(period=period, organizations=Organization.objects.all(), program=program, as_of=as_of)
        for row in report.rows:
            section.rows.append(cells(row.organization.name, row.figures, row.billed))
        section.total = cells(_("Program"), report.totals, report.billed_check.billed)
        through = report.billed_through
    else:
        pools, total = org_report(organization, period=period)
        for pool, figures in pools:
            section.rows.append(cells(f"{pool.instance_type.api_name} · {pool.region}", figures, None))
        check = billed_check(organization, period, total)
        section.total = cells(_("Total"), total, check.billed)
        through = check.through
    section.note = (
        _("Billed: what AWS billed through %(day)s (Cost Explorer), beside the running cost computed for those days.")
        % {"day": through.isoformat()}
        if through
        else _("Billed: nothing is settled by Cost Explorer for this period yet.")
    )
    return section


def budget_section(program: Program, rows: list[Standing], whole: Standing | None) -> Section:
    columns = [
        Column(_("Organization")),
        Column(_("Budget (%(currency)s)") % {"currency": program.currency}, LOCAL),
        Column(_("Budget (USD)"), USD),
        Column(_("Spent to date (USD)"), USD),
        Column(_("Spent to date (%(currency)s)") % {"currency": program.currency}, LOCAL),
        Column(_("Spent"), SHARE),
        Column(_("Forecast to the end of the cycle (USD)"), USD),
        Column(_("Forecast, low (USD)"), USD),
        Column(_("Forecast, high (USD)"), USD),
    ]
    section = Section("budget", _("Cost against budget"), columns)

    def cells(name: str, s: Standing) -> list:
        budget = s.budget_micro_usd
        f = s.forecast
        return [
            name, s.budget_local, _usd(budget), _usd(s.spent), local_value(s.spent, program),
            s.spent_share, _usd(f.at_end) if f else None, _usd(f.low) if f else None, _usd(f.high) if f else None,
        ]  # fmt: skip

    for standing in rows:
        section.rows.append(cells(standing.organization.name, standing))
    if whole is not None:
        section.total = cells(_("Program"), whole)
    anyone = whole or (rows[0] if rows else None)
    through = anyone.billed_through if anyone else None
    section.note = _(
        "Spent: what AWS billed through the last day Cost Explorer settled (%(day)s), the running cost computed "
        "from the rate card after it. Forecast: at the last 7 whole days' rate to the program's last day; low and "
        "high at the slowest and the busiest of the last four weeks."
    ) % {"day": through.isoformat() if through else "—"}
    return section


def milestone_section(milestones, *, as_of: datetime, with_org: bool) -> Section:
    columns = [
        *([Column(_("Organization"))] if with_org else []),
        Column(_("Milestone")),
        Column(_("Due"), DAY),
        Column(_("State")),
        Column(_("Tokens trained"), COUNT),
        Column(_("Tokens to train"), COUNT),
        Column(_("Reached (projected or met)"), DAY),
        Column(_("Evidence")),
    ]
    section = Section("milestones", _("Milestones"), columns)
    for s in milestone_states(milestones, now=as_of):
        m = s.milestone
        reached = local_day(m.met_at) if m.met_at else (local_day(s.finish.on) if s.finish and s.finish.on else None)
        row = [m.title, m.due_on, s.label, s.tokens, m.target_tokens, reached, m.evidence]
        section.rows.append([m.organization.name, *row] if with_org else row)
    return section


def deliverable_section(deliverables, *, with_org: bool) -> Section:
    columns = [
        *([Column(_("Organization"))] if with_org else []),
        Column(_("Released"), DAY),
        Column(_("Kind")),
        Column(_("Deliverable")),
        Column(_("Identifier")),
        Column(_("Details")),
        Column(_("Score"), DECIMAL),
    ]
    section = Section("deliverables", _("Deliverables released in the period"), columns)
    for d in deliverables:
        identifier = d.hf_repo_id or d.doi or (f"arXiv:{d.arxiv_id}" if d.arxiv_id else "") or d.url
        if d.kind == Deliverable.Kind.MODEL:
            details = " · ".join(filter(None, [d.license, f"{d.parameter_count:,}" if d.parameter_count else ""]))
        elif d.kind == Deliverable.Kind.EVALUATION:
            details = " · ".join(filter(None, [d.benchmark, d.setting, d.metric]))
        else:
            details = d.venue
        row = [d.released_on, d.get_kind_display(), d.title, identifier, details, d.score]
        section.rows.append([d.organization.name, *row] if with_org else row)
    return section


def incident_section(organizations: list[Organization], period: Period) -> Section:
    columns = [
        Column(_("Organization")),
        Column(_("Critical incidents"), COUNT),
        Column(_("Repaired"), COUNT),
        Column(_("Still open"), COUNT),
        Column(_("Mean time to repair (hours)"), DECIMAL),
        Column(_("Longest (hours)"), DECIMAL),
        Column(_("Node-hours lost"), DECIMAL),
    ]
    section = Section("incidents", _("Incidents and time to repair"), columns)
    found = repairs_by_organization(
        [o.pk for o in organizations],
        starts_at=day_start(period.first),
        ends_at=day_start(period.last + timedelta(days=1)),
    )
    for organization in organizations:
        r = found.get(organization.pk)
        if r is None:
            continue
        section.rows.append(
            [organization.name, r.incidents, r.repaired, r.open, _round(r.mean_hours), _round(r.longest_hours),
             _round(r.node_hours_lost)]
        )  # fmt: skip
    section.note = _(
        "Critical health events observed in the period; time to repair runs from the event to the node's healthy "
        "report (or its leaving the cluster). Open ones are not averaged in."
    )
    return section


def local_day(moment: datetime) -> date:
    """The program day of a moment (Asia/Tokyo), never its UTC date."""
    return timezone.localtime(moment).date()


def _round(value: float | None) -> Decimal | None:
    return None if value is None else Decimal(str(round(value, 2)))


def training_section(organizations: list[Organization], *, as_of: datetime) -> Section:
    columns = [
        Column(_("Organization")),
        Column(_("Workload")),
        Column(_("Tokens trained"), COUNT),
        Column(_("Planned tokens"), COUNT),
        Column(_("Of plan"), SHARE),
        Column(_("MFU (latest run)"), SHARE),
        Column(_("Finish at the last 7 days' rate"), DAY),
        Column(_("Allocation ends"), DAY),
    ]
    section = Section("training", _("Training progress"), columns)
    for organization in organizations:
        for item in organization_training(organization, now=as_of):
            finish = item.finish
            on = local_day(finish.on) if finish and finish.on else None
            ends = (
                local_day(finish.allocation_ends - timedelta(seconds=1)) if finish and finish.allocation_ends else None
            )
            share = Decimal(str(round(item.fraction, 4))) if item.fraction is not None else None
            mfu = Decimal(str(round(item.mfu, 4))) if item.mfu is not None else None
            section.rows.append(
                [organization.name, item.workload.name, item.tokens, item.workload.target_tokens, share, mfu, on, ends]
            )
    return section


def build(
    *, program: Program, organization: Organization | None, period: Period, as_of: datetime, title: str
) -> Content:
    """The report of the program (`organization` None) or of one organization, over `period`, as of `as_of`."""
    organizations = [organization] if organization else list(Organization.objects.order_by("name"))
    rows, whole = standings(program, organizations=organizations, with_program=organization is None, now=as_of)
    milestones = Milestone.objects.select_related("organization", "workload").order_by(
        "organization__name", "due_on", "pk"
    )
    deliverables = Deliverable.objects.select_related("organization").filter(
        released_on__gte=period.first, released_on__lte=period.last
    )
    if organization is not None:
        milestones, deliverables = milestones.filter(organization=organization), deliverables.for_org(organization)
    sections = [
        usage_section(program, organization, period, as_of),
        budget_section(program, rows, whole),
        milestone_section(milestones, as_of=as_of, with_org=organization is None),
        deliverable_section(
            deliverables.order_by("organization__name", "released_on", "pk"), with_org=organization is None
        ),
        incident_section(organizations, period),
        training_section(organizations, as_of=as_of),
    ]
    return Content(
        title=title,
        program=program,
        organization=organization,
        period=period,
        as_of=as_of,
        currency=program.currency,
        sections=sections,
    )


def period_label(period: Period) -> str:
    return f"{period.first.isoformat()} – {period.last.isoformat()}"


def month_period(month: date) -> Period:
    first = month.replace(day=1)
    last = (first + timedelta(days=32)).replace(day=1) - timedelta(days=1)
    return Period("month", first, last)
