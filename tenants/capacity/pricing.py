"""What an instance-hour of a window will cost the program: the rate card in force on each day of the window, as
usage is priced, with the on-demand catalog price beside it. Estimates on the request form, in the review queue
and from POST /api/v1/estimate/ all price through here.

The rate card lives in workloads.usage.rates, which registers its lookup here when the app starts: tenants never
imports workloads (the same rule as tenants.capacity.usage). Without it (tenants alone), the catalog price is the
rate, as the rate card itself falls back to it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal
from typing import Protocol

CATALOG = "catalog"


@dataclass(frozen=True)
class DayRate:
    usd_per_hour: Decimal | None
    source: str  # negotiated, reserved, on_demand (rate card kinds), catalog, or "" (nothing prices it)
    effective_from: date | None


class RateLookup(Protocol):
    def day_rate(self, instance_type_id: int, region: str, day: date) -> DayRate:
        """The rate in force that day (the rate card's precedence, the catalog as fallback)."""


class CatalogRates:
    """The catalog's on-demand prices alone: {(instance_type_id, region): usd_per_hour}."""

    def __init__(self, prices: dict[tuple[int, str], Decimal]):
        self._prices = prices

    def day_rate(self, instance_type_id: int, region: str, day: date) -> DayRate:
        price = self._prices.get((instance_type_id, region))
        return DayRate(price, CATALOG if price is not None else "", None)


@dataclass(frozen=True)
class WindowRate:
    """The price of an instance-hour over a window: the mean of the rate in force on each of its days (so the
    whole allocation costs exactly the sum of its days), which rate that is, and the catalog price beside it."""

    usd_per_hour: Decimal | None
    source: str  # the kind in force on the window's first day (see `changes`)
    effective_from: date | None
    catalog_usd_per_hour: Decimal | None
    changes: bool = False  # another rate takes over within the window

    @property
    def is_catalog(self) -> bool:
        return self.source == CATALOG


_loader: Callable[[dict], RateLookup] | None = None


def register(loader: Callable[[dict], RateLookup]) -> None:
    """`loader(catalog_prices)` returns a lookup over the rate card (workloads.usage.rates registers one)."""
    global _loader
    _loader = loader


def rates(catalog: dict[tuple[int, str], Decimal]) -> RateLookup:
    """A lookup for many estimates (a page loads it once)."""
    return _loader(catalog) if _loader is not None else CatalogRates(catalog)


def window_rate(lookup: RateLookup, catalog: dict, *, instance_type_id: int, region: str, first: date,
                last: date) -> WindowRate:  # fmt: skip
    """The window's rate from the lookup, day by day (windows are bounded by the program's cycle)."""
    catalog_price = catalog.get((instance_type_id, region))
    start = lookup.day_rate(instance_type_id, region, first)
    if last < first:
        return WindowRate(start.usd_per_hour, start.source, start.effective_from, catalog_price)
    total, days, changes, day = Decimal(0), 0, False, first
    while day <= last:
        rate = lookup.day_rate(instance_type_id, region, day)
        if rate.usd_per_hour is None or not rate.source:
            return WindowRate(None, "", None, catalog_price)  # a day nothing prices: no cost rather than $0
        total += rate.usd_per_hour
        days += 1
        changes = changes or (rate.usd_per_hour, rate.source) != (start.usd_per_hour, start.source)
        day += timedelta(days=1)
    # Not rounded: the whole window at the mean rate is then the sum of its days to the cent.
    return WindowRate(total / days, start.source, start.effective_from, catalog_price, changes)
