"""What an instance-hour costs the program on a given day, and the rate card that says so.

The rate of a type in a region on a day: of the rate-card entries in force that day (an entry holds from its
effective date until the next entry of the same type, region and kind), a negotiated rate beats a capacity block
or reservation price, which beats the on-demand list price; with no entry at all, the catalog's dated on-demand
price is the fallback. A change to the rate card re-prices the daily rows of the days it covers, and only those.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from tenants.access import require_program_manager
from tenants.cycle import check_dates
from tenants.models import CapacityPool, InstancePrice, InstanceType
from workloads.usage import summaries
from workloads.usage.definitions import cost_micro_usd
from workloads.usage.models import RateCardEntry, UsageDay, UsageRevision

Kind = RateCardEntry.Kind
PRECEDENCE = (Kind.NEGOTIATED, Kind.RESERVED, Kind.ON_DEMAND)
CATALOG = "catalog"
MANAGERS_ONLY = _("Only a program manager can change the rate card.")
# A rate's plausible range, one place for the service, the page's form, the API and its schema: no instance-hour the
# program buys costs more than RATE_CEILING times its type's on-demand list price in that region (negotiated and
# reserved rates are below it), nor 1,000 USD or more (RATE_DIGITS whole-dollar digits: over ten times the dearest
# catalog price, $68.80/h); a rate above is a typo ($999,999.99 for $99.99) that would re-price every day it covers.
# The schema's pattern for the decimal says the same (three digits before the point).
RATE_CEILING = 10
RATE_DIGITS = 3
MAX_USD_PER_HOUR = Decimal("999.9999")


@dataclass(frozen=True)
class Rate:
    usd_per_hour: Decimal
    source: str  # a rate-card kind, "catalog", or "" when nothing prices the type there
    effective_from: date | None = None  # the rate-card entry's first day (None for the catalog)


NO_RATE = Rate(Decimal("0"), "")


class RateTable:
    """Every rate in force, loaded in two queries; `rate()` answers in O(log entries)."""

    def __init__(self, entries, catalog: dict[tuple[int, str], Decimal]):
        self._starts: dict[tuple, list[date]] = defaultdict(list)
        self._prices: dict[tuple, list[Decimal]] = defaultdict(list)
        for entry in sorted(entries, key=lambda e: e.effective_from):
            key = (entry.instance_type_id, entry.region, entry.kind)
            self._starts[key].append(entry.effective_from)
            self._prices[key].append(entry.usd_per_hour)
        self._catalog = catalog

    def rate(self, instance_type_id: int, region: str, day: date) -> Rate:
        return self.day_rate(instance_type_id, region, day)

    def day_rate(self, instance_type_id: int, region: str, day: date) -> Rate:
        """The rate in force that day, with the day its entry took effect (tenants.capacity.pricing reads this
        to price estimates as usage is priced)."""
        for kind in PRECEDENCE:
            starts = self._starts.get((instance_type_id, region, kind))
            if starts:
                index = bisect.bisect_right(starts, day) - 1
                if index >= 0:
                    return Rate(self._prices[(instance_type_id, region, kind)][index], str(kind), starts[index])
        price = self._catalog.get((instance_type_id, region))
        return Rate(price, CATALOG) if price is not None else NO_RATE

    def runs(self, instance_type_id: int, region: str, first: date, last: date) -> Iterator[tuple[date, date, Rate]]:
        """The days `first` to `last` as runs of days with one rate: (first day, last day, rate), in order. A rate
        changes only on a day an entry of the type and region takes effect, so a year is a run or a few."""
        if last < first:
            return
        changes = sorted(
            {
                day
                for kind in PRECEDENCE
                for day in self._starts.get((instance_type_id, region, kind), ())
                if first < day <= last
            }
        )
        for start, end in zip([first, *changes], [*changes, last + timedelta(days=1)], strict=True):
            yield start, end - timedelta(days=1), self.day_rate(instance_type_id, region, start)


def load_rates() -> RateTable:
    catalog = {
        (t, r): usd for t, r, usd in InstancePrice.objects.values_list("instance_type_id", "region", "usd_per_hour")
    }
    return RateTable(RateCardEntry.objects.all(), catalog)


def estimate_rates(catalog: dict[tuple[int, str], Decimal]) -> RateTable:
    """The rate card for tenants.capacity.pricing (registered at start): estimates price as usage does. One query;
    the caller has loaded the catalog."""
    return RateTable(RateCardEntry.objects.all(), catalog)


def price(row: UsageDay, rate: Rate) -> None:
    """Set a daily row's rate and costs from its instance-time."""
    row.usd_per_hour, row.rate_source = rate.usd_per_hour, rate.source
    row.allocated_cost_micro_usd = cost_micro_usd(row.allocated_microseconds, rate.usd_per_hour)
    row.running_cost_micro_usd = cost_micro_usd(row.running_microseconds, rate.usd_per_hour)


# --- The rate card (program managers) -------------------------------------------------------------------------


def _covered_until(entry: RateCardEntry) -> date | None:
    """The last day an entry holds: the day before the next entry of its type, region and kind (None: open)."""
    following = (
        RateCardEntry.objects.filter(
            instance_type_id=entry.instance_type_id,
            region=entry.region,
            kind=entry.kind,
            effective_from__gt=entry.effective_from,
        )
        .order_by("effective_from")
        .values_list("effective_from", flat=True)
        .first()
    )
    return following - timedelta(days=1) if following else None


def reprice(*, instance_type: InstanceType, region: str, first: date, last: date | None) -> int:
    """Re-price the daily rows of pools of this type and region from `first` to `last` (None: every later day).
    Returns how many rows were re-priced. Their summaries are summed again and the charts drawn again, in the same
    transaction (the caller's)."""
    summaries.lock()
    pools = CapacityPool.objects.filter(instance_type=instance_type, region=region)
    rows = UsageDay.objects.filter(pool__in=pools, day__gte=first)
    if last is not None:
        rows = rows.filter(day__lte=last)
    rates = load_rates()
    changed = []
    for row in rows.select_related("pool").iterator(chunk_size=2000):
        price(row, rates.rate(instance_type.pk, region, row.day))
        changed.append(row)
    fields = ["usd_per_hour", "rate_source", "allocated_cost_micro_usd", "running_cost_micro_usd"]
    UsageDay.objects.bulk_update(changed, fields, batch_size=1000)
    if changed:
        summaries.refresh({row.day for row in changed}, {row.organization_id for row in changed})
        UsageRevision.bump(timezone.now())
    return len(changed)


@transaction.atomic
def add_rate(
    *,
    user,
    instance_type: InstanceType,
    region: str,
    kind: str,
    usd_per_hour: Decimal,
    effective_from: date,
    note: str = "",
) -> RateCardEntry:
    """A rate from a day on; the days it covers are re-priced in the same transaction."""
    require_program_manager(user, MANAGERS_ONLY)
    # A rate from year 0001 would re-price every day since: only days the program can mean are taken.
    check_dates(effective_from=effective_from)
    ceiling = rate_ceiling(instance_type=instance_type, region=region)
    if usd_per_hour > ceiling:
        raise ValidationError(
            {
                "usd_per_hour": _(
                    "%(rate)s USD per instance-hour is not a rate for %(type)s in %(region)s: at most %(max)s "
                    "(ten times its list price, and never over %(cap)s)."
                )
                % {
                    "rate": f"{usd_per_hour:,.2f}",
                    "type": instance_type,
                    "region": region,
                    "max": f"{ceiling:,.2f}",
                    "cap": f"{MAX_USD_PER_HOUR}",
                }  # fmt: skip
            }
        )
    entry = RateCardEntry(
        instance_type=instance_type,
        region=region,
        kind=kind,
        usd_per_hour=usd_per_hour,
        effective_from=effective_from,
        note=(note or "").strip(),
        created_by=user,
    )
    entry.full_clean(validate_constraints=False)
    duplicate = RateCardEntry.objects.filter(
        instance_type=instance_type, region=region, kind=kind, effective_from=effective_from
    )
    if duplicate.exists():
        raise ValidationError(
            {
                "effective_from": _(
                    "%(type)s in %(region)s already has a %(kind)s from %(day)s: change or remove that entry instead."
                )
                % {
                    "type": instance_type,
                    "region": region,
                    "kind": entry.get_kind_display().lower(),
                    "day": effective_from,
                }
            }
        )
    entry.save()
    reprice(instance_type=instance_type, region=region, first=effective_from, last=_covered_until(entry))
    return entry


def rate_ceiling(*, instance_type: InstanceType, region: str) -> Decimal:
    """The most an instance-hour of this type in this region may be priced at (RATE_CEILING, MAX_USD_PER_HOUR)."""
    listed = InstancePrice.objects.filter(instance_type=instance_type, region=region).values_list(
        "usd_per_hour", flat=True
    )
    return min([MAX_USD_PER_HOUR, *(price * RATE_CEILING for price in listed)])


@transaction.atomic
def remove_rate(*, user, entry: RateCardEntry) -> None:
    require_program_manager(user, MANAGERS_ONLY)
    first, last = entry.effective_from, _covered_until(entry)
    instance_type, region = entry.instance_type, entry.region
    entry.delete()
    reprice(instance_type=instance_type, region=region, first=first, last=last)
