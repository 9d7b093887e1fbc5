"""Reading the program's pools: which pool serves a request, what is allocated in it over a window, how much is
free, and what a plan would cost. The pool invariant itself is checked in tenants.capacity.decisions."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from decimal import Decimal

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F, Func, IntegerField, Sum
from django.utils.formats import date_format
from django.utils.translation import gettext as _

from tenants.capacity import pricing
from tenants.capacity.estimate import Estimate, Hardware, estimate
from tenants.capacity.ledger import allocated_by_day, peak_in
from tenants.capacity.pricing import RateLookup
from tenants.capacity.sweep import Peak, Span
from tenants.models import Allocation, CapacityPool, CapacityRequest, InstancePrice, InstanceType, Program


def find_pool(*, instance_type: InstanceType, region: str, starts_on: date, ends_on: date) -> CapacityPool:
    """The program pool that serves this type and region over the window, or a ValidationError saying why not."""
    if not InstancePrice.objects.filter(instance_type=instance_type, region=region).exists():
        raise ValidationError(
            {"region": _("%(type)s is not offered in %(region)s.") % {"type": instance_type, "region": region}}
        )
    pools = list(
        CapacityPool.objects.filter(instance_type=instance_type, region=region)
        .select_related("program", "instance_type")
        .order_by("-program__starts_on", "pk")
    )
    if not pools:
        raise ValidationError(
            {
                "instance_type": _("The program has no pool of %(type)s in %(region)s.")
                % {"type": instance_type, "region": region}
            }
        )
    for pool in pools:
        if pool.starts_on <= starts_on and ends_on <= pool.ends_on:
            return pool
    pool = pools[0]
    message = _("The %(pool)s pool is available from %(start)s to %(end)s; choose dates inside that window.") % {
        "pool": pool,
        "start": date_format(pool.starts_on, "Y-m-d"),
        "end": date_format(pool.ends_on, "Y-m-d"),
    }
    field = "starts_on" if starts_on < pool.starts_on or starts_on > pool.ends_on else "ends_on"
    raise ValidationError({field: message})


def pool_spans(
    pool_ids: list[int], *, starts_on: date, ends_on: date, organizations: list[int] | None = None
) -> dict[int, list[Span]]:
    """The allocations holding capacity in these pools over the window (of these organizations only, if given),
    in one query, keyed by pool. Headroom reads the ledger instead."""
    spans: dict[int, list[Span]] = {pk: [] for pk in pool_ids}
    rows = Allocation.objects.filter(pool_id__in=pool_ids)
    if organizations is not None:
        rows = rows.filter(organization_id__in=organizations)
    rows = (
        rows.holding_capacity()
        .overlapping(starts_on, ends_on)
        .values_list("pool_id", "starts_on", "ends_on", "instance_count", "organization_id")
    )
    for pool_id, start, end, count, org_id in rows:
        spans[pool_id].append(Span(start, end, count, org_id))
    return spans


class DaysHeld(Func):
    """An allocation's days, both ends inclusive, as an integer in SQL (PostgreSQL: date − date is days)."""

    output_field = IntegerField()

    def __init__(self):
        super().__init__(F("ends_on"), F("starts_on"))

    def as_sql(self, compiler, connection, **extra):
        return super().as_sql(compiler, connection, template="(%(expressions)s + 1)", arg_joiner=" - ", **extra)

    def as_sqlite(self, compiler, connection, **extra):
        template = "(CAST(julianday(%(expressions)s) AS INTEGER) + 1)"
        return super().as_sql(compiler, connection, template=template, arg_joiner=") - julianday(", **extra)


def largest_holders(pool: CapacityPool, *, limit: int) -> tuple[list[int], int]:
    """The organizations holding the most instance-days in the pool, largest first (at most `limit`; ties by id),
    and how many others hold any: aggregated in the database in one query, a row per organization."""
    holding = Allocation.objects.filter(pool=pool).holding_capacity().values("organization_id")
    weights = holding.annotate(weight=Sum(F("instance_count") * DaysHeld())).order_by("-weight", "organization_id")
    holders = list(weights.values_list("organization_id", flat=True))
    return holders[:limit], max(len(holders) - limit, 0)


@dataclass(frozen=True)
class PoolHeadroom:
    """Free capacity of a pool over a window: what is allocatable less the busiest day's allocations."""

    allocatable: int
    peak: Peak
    covers_window: bool = True  # False: part of the window lies outside the pool's own window

    @property
    def free(self) -> int:
        if not self.covers_window:
            return 0  # the pool has no capacity at all on the days it does not cover
        return max(self.allocatable - self.peak.used, 0)


def pool_headroom(pool: CapacityPool, by_day: dict[date, int], *, starts_on: date, ends_on: date) -> PoolHeadroom:
    """Free capacity over a window from the pool's ledger days (`ledger.allocated_by_day`): O(days)."""
    covers = pool.starts_on <= starts_on and ends_on <= pool.ends_on
    return PoolHeadroom(pool.allocatable_instances, peak_in(by_day, first=starts_on, last=ends_on), covers)


def headroom(pool: CapacityPool, *, starts_on: date, ends_on: date) -> PoolHeadroom:
    """One pool's free capacity over a window, read from its ledger (one query)."""
    by_day = allocated_by_day([pool.pk], first=starts_on, last=ends_on)[pool.pk]
    return pool_headroom(pool, by_day, starts_on=starts_on, ends_on=ends_on)


def pool_free(instance_type: InstanceType, region: str, *, starts_on: date, ends_on: date) -> PoolHeadroom | None:
    """The free capacity, over a window, of the pool a request for this type and region would go to (the one
    find_pool picks); None when no pool covers the window (the request form says why when it is sent)."""
    try:
        pool = find_pool(instance_type=instance_type, region=region, starts_on=starts_on, ends_on=ends_on)
    except ValidationError:
        return None
    return headroom(pool, starts_on=starts_on, ends_on=ends_on)


def check_pool_change(*, pool: CapacityPool, total_instances: int, spare_instances: int, starts_on: date,
                      ends_on: date) -> None:  # fmt: skip
    """A pool may shrink only while its allocations still fit: the invariant holds for pool edits too."""
    if pool.pk is None:
        return
    holding = Allocation.objects.filter(pool=pool).holding_capacity()
    outside = holding.exclude(starts_on__gte=starts_on, ends_on__lte=ends_on).order_by("starts_on").first()
    if outside is not None:
        raise ValidationError(
            _("Allocation %(id)s (%(start)s – %(end)s) lies outside the new window; revoke or move it first.")
            % {"id": outside.number, "start": outside.starts_on, "end": outside.ends_on}
        )
    peak = peak_in(allocated_by_day([pool.pk], first=starts_on, last=ends_on)[pool.pk], first=starts_on, last=ends_on)
    if peak.used > total_instances - spare_instances:
        raise ValidationError(
            _("On %(day)s, %(used)s instances are allocated: the pool needs at least %(used)s allocatable "
              "(total − spare), not %(allocatable)s.")
            % {"day": peak.on, "used": peak.used, "allocatable": total_instances - spare_instances}
        )  # fmt: skip


@transaction.atomic
def save_pool(*, pool: CapacityPool) -> CapacityPool:
    """Save a pool edit (admin) under the pool row lock, re-checking the invariant."""
    if pool.pk is not None:
        CapacityPool.objects.select_for_update().get(pk=pool.pk)
    check_pool_change(
        pool=pool,
        total_instances=pool.total_instances,
        spare_instances=pool.spare_instances,
        starts_on=pool.starts_on,
        ends_on=pool.ends_on,
    )
    pool.save()
    return pool


def catalog_prices() -> dict[tuple[int, str], Decimal]:
    """Every on-demand price, {(instance_type_id, region): usd_per_hour}, in one query."""
    rows = InstancePrice.objects.values_list("instance_type_id", "region", "usd_per_hour")
    return {(type_id, region): usd for type_id, region, usd in rows}


def request_estimate(
    capacity_request: CapacityRequest, *, prices: dict | None = None, rates: RateLookup | None = None
) -> Estimate | None:
    """The estimate for a request's training plan, or None when it states no parameter count: on what was granted
    once a decision made an allocation (a trimmed grant changes the time to train), else on what was asked.
    Pass `prices` (catalog_prices()) and `rates` (pricing.rates(prices)) when estimating many requests."""
    if not capacity_request.parameter_count:
        return None
    pool = capacity_request.pool
    granted = capacity_request.granted or capacity_request
    return estimate_for(
        instance_type=pool.instance_type,
        region=pool.region,
        program=pool.program,
        parameters=capacity_request.parameter_count,
        tokens=capacity_request.training_tokens,
        instance_count=granted.instance_count,
        starts_on=granted.starts_on,
        ends_on=granted.ends_on,
        mfu=capacity_request.expected_mfu,
        prices=prices,
        rates=rates,
    )


def estimate_for(
    *,
    instance_type: InstanceType,
    region: str,
    program: Program | None,
    parameters: int,
    tokens: int | None,
    instance_count: int,
    starts_on: date,
    ends_on: date,
    mfu: Decimal | None,
    prices: dict | None = None,
    rates: RateLookup | None = None,
) -> Estimate:
    """Priced at the rate card in force over the window (as usage is), the catalog price beside it. `prices`
    ({(type_id, region): usd}) and `rates` (pricing.rates(prices)) let a page price many estimates from one
    load."""
    if prices is None:
        usd = (
            InstancePrice.objects.filter(instance_type=instance_type, region=region)
            .values_list("usd_per_hour", flat=True)
            .first()
        )
        prices = {} if usd is None else {(instance_type.pk, region): usd}
    window = pricing.window_rate(
        rates or pricing.rates(prices),
        prices,
        instance_type_id=instance_type.pk,
        region=region,
        first=starts_on,
        last=ends_on,
    )
    hardware = Hardware(
        api_name=instance_type.api_name,
        accelerators_per_instance=instance_type.accelerators_per_instance,
        accelerator_memory_gib=instance_type.accelerator_memory_gib,
        peak_bf16_tflops=instance_type.peak_bf16_tflops,
        usd_per_hour=window.usd_per_hour,
        rate_source=window.source,
        rate_effective_from=window.effective_from,
        rate_changes=window.changes,
        catalog_usd_per_hour=window.catalog_usd_per_hour,
    )
    return estimate(
        parameters=parameters,
        tokens=tokens,
        hardware=hardware,
        instance_count=instance_count,
        starts_on=starts_on,
        ends_on=ends_on,
        mfu=mfu,
        exchange_rate=program.usd_exchange_rate if program else Decimal("1"),
    )
