"""Reading the usage rollups: every figure a page, export, the API or the digest shows, summed from the daily
rows (never from the intervals) in a fixed number of queries whatever the length of the period or the history.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from functools import cached_property

from django.db.models import (
    BigIntegerField,
    Case,
    F,
    FilteredRelation,
    FloatField,
    IntegerField,
    Q,
    QuerySet,
    Sum,
    Value,
    When,
)
from django.db.models.functions import Cast, Coalesce
from django.db.models.lookups import LessThan
from django.utils import timezone

from portal.periods import week_of
from tenants.models import CapacityPool, Organization, Program
from workloads.usage.billed import (
    BilledCheck,
    SettledBilling,
    billed_off,
    billed_settled,
    billed_settled_through,
    settled_sum,
    week_summaries_settled,
)
from workloads.usage.capacity import pool_capacity
from workloads.usage.definitions import (
    ROW_SUMS,
    accelerator_sums,
    hours,
    row_sums,
    summary_sums,
    usd,
    utilization,
)
from workloads.usage.models import BilledCost, PoolUsageDay, UsageDay, UsageWeek
from workloads.usage.periods import Period
from workloads.usage.summaries import weeks_hold

ACCELERATORS = F("pool__instance_type__accelerators_per_instance")


class InstanceTime:
    """What allocated and running instance-time (instance-microseconds) read as: hours and utilization."""

    allocated: int
    running: int

    @property
    def allocated_hours(self) -> Decimal:
        return hours(self.allocated)

    @property
    def running_hours(self) -> Decimal:
        return hours(self.running)

    @property
    def utilization(self) -> Decimal | None:
        return utilization(self.running, self.allocated)


# Every figure of Figures but busy (None until a job is reported): plain sums of daily rows.
ADDED = ("allocated", "running", "allocated_accelerators", "running_accelerators", "allocated_cost", "running_cost",
         "idle", "idle_cost", "over_allocation", "over_allocation_cost")  # fmt: skip


@dataclass
class Figures(InstanceTime):
    """Allocated and running instance-time of some rows, with accelerator-time and cost."""

    allocated: int = 0  # instance-microseconds
    running: int = 0
    allocated_accelerators: int = 0  # accelerator-microseconds
    running_accelerators: int = 0
    busy_accelerators: int | None = None
    allocated_cost: int = 0  # micro-USD
    running_cost: int = 0
    # Summed from the daily rows, each floored at 0 first (definitions.ROW_SUMS): never allocated − running of
    # the sums, which would net one pool's idle hours against another's over-running.
    idle: int = 0  # instance-microseconds
    idle_cost: int = 0  # micro-USD
    over_allocation: int = 0  # instance-microseconds run beyond the allocation
    over_allocation_cost: int = 0

    def add(self, other: Figures) -> None:
        for name in ADDED:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        if other.busy_accelerators is not None:
            self.busy_accelerators = (self.busy_accelerators or 0) + other.busy_accelerators

    def without(self, part: Figures) -> Figures:
        """These rows' figures less those of `part`, some of them (the organizations a chart does not draw one by
        one): each is a plain sum of daily rows (idle and over-allocation floored per row first), so the
        difference is exactly the other rows' sum."""
        busy = None if self.busy_accelerators is None else self.busy_accelerators - (part.busy_accelerators or 0)
        return Figures(**{name: getattr(self, name) - getattr(part, name) for name in ADDED}, busy_accelerators=busy)

    @property
    def allocated_accelerator_hours(self) -> Decimal:
        return hours(self.allocated_accelerators)

    @property
    def running_accelerator_hours(self) -> Decimal:
        return hours(self.running_accelerators)

    @property
    def busy_accelerator_hours(self) -> Decimal | None:
        return None if self.busy_accelerators is None else hours(self.busy_accelerators)

    @property
    def busy_share(self) -> Decimal | None:
        """Busy ÷ running accelerator-time: how much of what ran held a job."""
        if self.busy_accelerators is None or not self.running_accelerators:
            return None
        return Decimal(self.busy_accelerators) / Decimal(self.running_accelerators)

    @property
    def idle_hours(self) -> Decimal:
        return hours(self.idle)

    @property
    def over_allocation_hours(self) -> Decimal:
        return hours(self.over_allocation)

    @property
    def over_allocated(self) -> bool:
        """Something ran beyond its allocation: flagged wherever the figure is shown."""
        return self.over_allocation > 0

    @property
    def allocated_usd(self) -> Decimal:
        return usd(self.allocated_cost)

    @property
    def running_usd(self) -> Decimal:
        return usd(self.running_cost)

    @property
    def idle_usd(self) -> Decimal:
        return usd(self.idle_cost)

    @property
    def over_allocation_usd(self) -> Decimal:
        return usd(self.over_allocation_cost)


def total_of(parts) -> Figures:
    """The sum of some Figures (a table's rows: its total)."""
    total = Figures()
    for figures in parts:
        total.add(figures)
    return total


def _figures(row: Mapping) -> Figures:
    """The Figures of one grouped row of ROW_SUMS: grouped by instance type (its `accelerators` per instance), or
    with accelerator-time summed across types (accelerator_sums)."""
    allocated, running = row["allocated"] or 0, row["running"] or 0
    if "accelerators" in row:
        allocated_accelerators, running_accelerators = allocated * row["accelerators"], running * row["accelerators"]
    else:
        allocated_accelerators, running_accelerators = row["allocated_accelerators"], row["running_accelerators"]
    return Figures(
        allocated=allocated,
        running=running,
        allocated_accelerators=allocated_accelerators or 0,
        running_accelerators=running_accelerators or 0,
        busy_accelerators=row["busy"],
        allocated_cost=row["allocated_cost"] or 0,
        running_cost=row["running_cost"] or 0,
        idle=row["idle"] or 0,
        idle_cost=row["idle_cost"] or 0,
        over_allocation=row["over_allocation"] or 0,
        over_allocation_cost=row["over_allocation_cost"] or 0,
    )


def summed(rows: QuerySet[UsageDay], *keys: str) -> dict[tuple, Figures]:
    """The rows summed per `keys` (e.g. organization_id), one query; each key's Figures."""
    totals: dict[tuple, Figures] = defaultdict(Figures)
    for row in rows.values(*keys, accelerators=ACCELERATORS).annotate(**ROW_SUMS):
        totals[tuple(row[k] for k in keys)].add(_figures(row))
    return totals


def summed_summaries(rows: QuerySet, *keys: str) -> dict[tuple, Figures]:
    """Summary rows (UsageWeek, PoolUsageDay) summed per `keys`, one query; each key's Figures."""
    return {
        tuple(row[k] for k in keys): _figures(row) for row in rows.order_by().values(*keys).annotate(**summary_sums())
    }


def in_period(rows: QuerySet[UsageDay], period: Period) -> QuerySet[UsageDay]:
    return rows.filter(day__gte=period.first, day__lte=period.last)


def org_report(organization: Organization, *, period: Period) -> tuple[list[tuple[CapacityPool, Figures]], Figures]:
    """An organization's period as its page shows it: (pool, figures) per pool, its daily rows summed in one query,
    and their total."""
    by_pool = summed(in_period(UsageDay.objects.for_org(organization), period), "pool_id")
    pools = CapacityPool.objects.filter(pk__in=[pool_id for (pool_id,) in by_pool]).select_related("instance_type")
    pools = [(pool, by_pool[(pool.pk,)]) for pool in pools.order_by("instance_type__api_name")]
    return pools, total_of(by_pool.values())


def billed_check(organization: Organization, period: Period, figures: Figures) -> BilledCheck:
    """One organization's billed check over the period's settled days (`figures`: its period's figures)."""
    through, settled = billed_settled(organization_ids=[organization.pk], period=period)
    if through is None:
        return BilledCheck(None, 0, None, figures.running_cost)
    billed, computed = settled.get(organization.pk, (None, 0))
    return BilledCheck(billed, computed, through, figures.running_cost - computed)


# --- The program table ----------------------------------------------------------------------------------------


@dataclass
class OrgRow:
    organization: Organization
    figures: Figures
    previous: Figures | None
    billed: int | None  # micro-USD from Cost Explorer over the settled days, None when none is settled
    idle: bool
    billed_computed: int = 0  # the running cost computed over the same settled days
    billed_through: date | None = None  # the last settled day of the period (None: none settled yet)

    @property
    def change(self) -> Decimal | None:
        """Utilization now minus utilization in the previous period, in points of a fraction."""
        now, before = self.figures.utilization, self.previous.utilization if self.previous else None
        return None if now is None or before is None else now - before

    @property
    def billed_usd(self) -> Decimal | None:
        return None if self.billed is None else usd(self.billed)

    @property
    def billed_check(self) -> BilledCheck:
        return BilledCheck(self.billed, self.billed_computed, self.billed_through, self.unbilled_cost)

    @property
    def unbilled_cost(self) -> int:
        """The running cost computed on the days Cost Explorer has not settled yet."""
        return self.figures.running_cost - self.billed_computed

    @property
    def billed_gap(self) -> Decimal | None:
        return self.billed_check.gap

    @property
    def billed_off(self) -> bool:
        return self.billed_check.off


@dataclass
class PoolRow:
    pool: CapacityPool
    capacity: int  # instance-microseconds the pool offered in the period
    capacity_cost: int
    figures: Figures = field(default_factory=Figures)

    @property
    def unallocated(self) -> int:
        return max(self.capacity - self.figures.allocated, 0)

    @property
    def unallocated_cost(self) -> int:
        return max(self.capacity_cost - self.figures.allocated_cost, 0)

    @property
    def capacity_hours(self) -> Decimal:
        return hours(self.capacity)

    @property
    def unallocated_hours(self) -> Decimal:
        return hours(self.unallocated)


def fraction(value: Decimal) -> tuple[int, int]:
    """A threshold as numerator and denominator, so SQL compares integers exactly (as the pages' Decimals do)."""
    return value.as_integer_ratio()


def org_usage(
    organizations: QuerySet[Organization],
    *,
    period: Period,
    through: date | None,
    threshold: Decimal,
    settled: SettledBilling | None = None,
    billed_summarized: bool = False,
    by_weeks: bool = False,
) -> QuerySet[Organization]:
    """Every organization with its figures over the period summed in the database, so a page of 20 among 2,000 is
    sorted and cut there: ROW_SUMS of the period (from the weekly summaries when they hold its figures,
    `by_weeks`: see weeks_hold), the previous period's allocated and running time (the change), what Cost Explorer
    billed over the settled days (through `through`) and the running cost computed over them, and the flags
    "needing attention" orders by (billed apart: from the week's summaries in SQL, or the organizations `settled`
    found apart); ordered by attention (ATTENTION). All are aliases: a read computes only the sums its order
    needs; with_figures selects them."""
    previous = period.previous()
    first = previous.first if previous else period.first
    nothing = Cast(Value(None), BigIntegerField())  # typed, so SQL can subtract it
    if by_weeks:  # a week among 2,000 organizations: 4,000 weekly rows, not 28,000 daily ones; a year 52 each, not 730
        span = Q(usage_weeks__week__gte=week_of(first), usage_weeks__week__lte=week_of(period.last))
        usage = FilteredRelation("usage_weeks", condition=span)
        sums = summary_sums("usage__", Q(usage__week__gte=week_of(period.first)))
        before = {
            f"previous_{name}": Sum(f"usage__{name}", filter=Q(usage__week__lte=week_of(previous.last)))
            for name in ("allocated", "running")
            if previous
        }
    else:
        span = Q(usage_days__day__gte=first, usage_days__day__lte=period.last)
        usage = FilteredRelation("usage_days", condition=span)
        in_period = Q(usage__day__gte=period.first)
        sums = {**row_sums("usage__", in_period), **accelerator_sums("usage__", in_period)}  # as the summaries hold
        before = {
            f"previous_{name}": Sum(f"usage__{name}_microseconds", filter=Q(usage__day__lte=previous.last))
            for name in ("allocated", "running")
            if previous
        }
    before = before or {"previous_allocated": nothing, "previous_running": nothing}
    if billed_summarized:  # one week whose summaries hold its billed check (billed.week_summaries_settled)
        now = Q(usage__week__gte=period.first)
        settled_sums = {
            "billed": Sum("usage__billed", filter=now),
            "billed_computed": Coalesce(Sum("usage__billed_computed", filter=now), 0),
        }
        billed_apart = _flag(billed_off("billed", "billed_computed"))
    else:
        settled_sums = _settled_sums(period, through)
        # (a constant ordered by is typed, or SQL reads it as a column position)
        billed_apart = _flag(Q(pk__in=settled.off_ids())) if settled else Cast(0, IntegerField())
    idle_p, idle_q = fraction(threshold)
    return (
        organizations.annotate(usage=usage)
        .alias(**sums, **before, **settled_sums)
        .alias(
            utilization=_ratio("running", "allocated"),
            change=_ratio("running", "allocated") - _ratio("previous_running", "previous_allocated"),
            # Idle: running ÷ allocated under the threshold, as integers, exactly as the rows' Decimals say it.
            is_idle=_flag(Q(allocated__gt=0) & LessThan(F("running") * idle_q, F("allocated") * idle_p)),
            is_over=_flag(Q(over_allocation__gt=0)),
            is_billed_off=billed_apart,
        )
        .order_by(*ATTENTION)
    )


def _settled_sums(period: Period, through: date | None) -> dict:
    """Each organization's billed and computed running cost over the settled days, from BilledCost and UsageDay."""
    nothing = Cast(Value(None), BigIntegerField())
    if not through:
        return {"billed": nothing, "billed_computed": nothing}
    # Bare subqueries (None when nothing was computed: the rows read it as 0): wrapped, in Coalesce say, Django
    # groups by the wrapper, and it is evaluated once per joined daily row, not once per organization.
    return {
        "billed": settled_sum(BilledCost, "cost_micro_usd", first=period.first, through=through),
        "billed_computed": settled_sum(UsageDay, "running_cost_micro_usd", first=period.first, through=through),
    }


SELECTED = (*ROW_SUMS, "previous_allocated", "previous_running", "billed", "billed_computed")


def with_figures(organizations: QuerySet[Organization], *, period: Period) -> QuerySet[Organization]:
    """org_usage's organizations with every figure a row shows selected, and their accelerator-time (kept in the
    weekly summaries, summed beside the other figures when org_usage reads them; from daily rows, a join to the
    instance types the ranking does without)."""
    if "allocated_accelerators" in organizations.query.annotations:  # summed from the summaries already
        accelerators = {name: F(name) for name in ("allocated_accelerators", "running_accelerators")}
    else:
        accelerators = accelerator_sums("usage__", Q(usage__day__gte=period.first))
    return organizations.annotate(**{name: F(name) for name in SELECTED}, **accelerators)


def _ratio(numerator: str, denominator: str) -> Case:
    return Case(
        When(**{f"{denominator}__gt": 0}, then=Cast(numerator, FloatField()) / Cast(denominator, FloatField())),
        default=Value(None),
        output_field=FloatField(),
    )


def _flag(condition) -> Case:
    return Case(When(condition, then=Value(1)), default=Value(0), output_field=IntegerField())


# The organizations needing attention first: idle, then running beyond an allocation, then billed apart from the
# computed cost, then the least used; those with nothing allocated last; by name within each.
ATTENTION = (
    F("is_idle").desc(),
    F("is_over").desc(),
    F("is_billed_off").desc(),
    F("utilization").asc(nulls_last=True),
    "name",
    "pk",
)


@dataclass
class ProgramReport:
    """The program table of a period. `ranked` (org_usage: every organization, attention first) is read a page at
    a time by the page (`page_rows`), whole by the CSV (streamed) and the digest (`iter_rows`); `totals` are the
    whole program's."""

    period: Period
    program: Program | None
    organizations: QuerySet[Organization]  # the ones the reader may see
    ranked: QuerySet[Organization]
    totals: Figures
    pools: list[PoolRow]
    threshold: Decimal
    billed_through: date | None = None
    # Over the settled days, summed over the organizations billed then: (billed or None, computed), micro-USD
    billed_totals: tuple[int | None, int] = (None, 0)

    @property
    def billed_check(self) -> BilledCheck:
        """The whole program's billed against computed running cost over the settled days."""
        if self.billed_through is None:
            return BilledCheck(None, 0, None, self.totals.running_cost)
        billed, computed = self.billed_totals
        return BilledCheck(billed, computed, self.billed_through, self.totals.running_cost - computed)

    def row(self, organization: Organization) -> OrgRow:
        """One organization read through with_figures, as the table, the CSV and the digest show it."""
        values = vars(organization)
        figures = _figures(values)
        previous = (
            None
            if values["previous_allocated"] is None
            else Figures(allocated=values["previous_allocated"], running=values["previous_running"] or 0)
        )
        billed = values["billed"]
        computed = (values["billed_computed"] or 0) if billed is not None else 0
        ratio = figures.utilization
        return OrgRow(
            organization=organization,
            figures=figures,
            previous=previous,
            billed=billed,
            billed_computed=computed,
            billed_through=self.billed_through,
            idle=ratio is not None and ratio < self.threshold,
        )

    def page_rows(self, ranked: QuerySet[Organization]) -> list[OrgRow]:
        """The rows of a slice of `ranked` (sorted and cut in the database: only the ids come back), then the
        figures of those organizations alone: two queries whatever the number of organizations."""
        ids = list(ranked.values_list("pk", flat=True))
        found = with_figures(self.ranked.filter(pk__in=ids), period=self.period).order_by().in_bulk()
        return [self.row(found[pk]) for pk in ids]

    def iter_rows(self, *, chunk: int = 500) -> Iterator[OrgRow]:
        """Every organization by name, read `chunk` at a time (the CSV streams them)."""
        everyone = with_figures(self.ranked, period=self.period).order_by("name", "pk")
        for organization in everyone.iterator(chunk_size=chunk):
            yield self.row(organization)

    @cached_property
    def rows(self) -> list[OrgRow]:
        """Every organization by name (the digest)."""
        return list(self.iter_rows())

    @cached_property
    def count(self) -> int:
        return self.organizations.count()

    @property
    def idle_rows(self) -> list[OrgRow]:
        return [row for row in self.rows if row.idle]

    @property
    def over_allocated_rows(self) -> list[OrgRow]:
        return [row for row in self.rows if row.figures.over_allocated]

    @property
    def capacity_cost(self) -> int:
        return sum(p.capacity_cost for p in self.pools)

    @property
    def unallocated_cost(self) -> int:
        return sum(p.unallocated_cost for p in self.pools)

    def in_local(self, micro_usd: int) -> Decimal | None:
        if self.program is None:
            return None
        return (usd(micro_usd) * self.program.usd_exchange_rate).quantize(Decimal("1"))


def rows_of(model, organizations: QuerySet[Organization]) -> QuerySet:
    """The model's rows of these organizations; all of them, with no subquery over every organization's id in each
    sum, when `organizations` is every one (program staff, as TenantQuerySet.visible_to does)."""
    if organizations.query.has_filters():
        return model.objects.filter(organization__in=organizations)
    return model.objects.all()


def program_report(
    *, period: Period, organizations: QuerySet[Organization], program: Program | None, as_of: datetime | None = None
) -> ProgramReport:
    """The program table of a period in a fixed number of queries and rows read, whatever the number of
    organizations: the billed check over the settled days summed for the program (one read), the pools' figures
    (one grouped read, their sum the program's totals), and the organizations' figures and billed checks, read by
    whoever shows them (a page of the table, or all of them streamed)."""
    as_of = as_of or timezone.now()
    through = billed_settled_through(period)
    threshold = program.idle_threshold if program else Decimal("0.5")
    # The billed check: a week's from its summaries when they hold it as of `through`; otherwise from the
    # daily rows, each side grouped per organization once (SettledBilling).
    summarized = period.whole_weeks and period.days == 7 and week_summaries_settled(period.first, through)
    by_weeks = weeks_hold(period, rows_of(UsageDay, organizations))
    settled = None
    billed_totals: tuple[int | None, int] = (None, 0)
    if through and summarized:
        found = (
            rows_of(UsageWeek, organizations)
            .filter(week=period.first)
            .aggregate(all_billed=Sum("billed"), all_computed=Sum("billed_computed", filter=Q(billed__isnull=False)))
        )
        billed_totals = (found["all_billed"], found["all_computed"] or 0)
    elif through:
        settled = SettledBilling(
            billed_rows=rows_of(BilledCost, organizations),
            usage_rows=rows_of(UsageDay, organizations),
            first=period.first,
            through=through,
        )
        billed_totals = settled.totals()
    # Per pool over the organizations the reader may see, summed into the totals: for program staff (every one),
    # the pool-days' sums; otherwise the daily rows of those organizations.
    if organizations.query.has_filters():
        by_pool = summed(in_period(rows_of(UsageDay, organizations), period), "pool_id")
    else:
        by_pool = summed_summaries(in_period(PoolUsageDay.objects.all(), period), "pool_id")
    totals = Figures()
    for figures in by_pool.values():
        totals.add(figures)
    pools = list(
        CapacityPool.objects.filter(program=program)
        .select_related("instance_type")
        .order_by("instance_type__api_name", "region")
        if program
        else []
    )
    offered = pool_capacity(pools, period, as_of=as_of)
    pool_rows = [PoolRow(pool, *offered[pool.pk], figures=by_pool.get((pool.pk,), Figures())) for pool in pools]
    return ProgramReport(
        period=period,
        program=program,
        organizations=organizations,
        ranked=org_usage(
            organizations,
            period=period,
            through=through,
            threshold=threshold,
            settled=settled,
            billed_summarized=summarized,
            by_weeks=by_weeks,
        ),
        totals=totals,
        pools=pool_rows,
        threshold=threshold,
        billed_through=through,
        billed_totals=billed_totals,
    )
