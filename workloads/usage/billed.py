"""Billed against computed: what Cost Explorer billed beside the running cost computed from the rate card, over
the days it has settled only (a lag of Cost Explorer never reads as a gap)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from decimal import Decimal

from django.db.models import Sum

from workloads.usage.models import BilledCost, UsageDay
from workloads.usage.periods import Period

BILLED_TOLERANCE = Decimal("0.10")  # billed and computed cost may differ by a tenth before a page flags it


@dataclass(frozen=True)
class BilledCheck:
    """What AWS billed (Cost Explorer) beside the running cost computed from the rate card over the same settled
    days (through `through`), both in micro-USD: a gap over BILLED_TOLERANCE either way is flagged on the
    program's and the organization's usage pages. `unbilled` is the computed running cost of the period's days
    after `through`, shown apart and never compared."""

    billed: int | None
    computed: int
    through: date | None = None
    unbilled: int = 0

    @property
    def gap(self) -> Decimal | None:
        """Billed against computed, as a fraction of the computed (None without both)."""
        if self.billed is None or not self.computed:
            return None
        return Decimal(self.billed - self.computed) / Decimal(self.computed)

    @property
    def off(self) -> bool:
        return self.gap is not None and abs(self.gap) > BILLED_TOLERANCE


def billed_settled_through(period: Period) -> date | None:
    """The last day of the period Cost Explorer has settled: the latest day any organization was billed for
    (the billing fetch reads every linked account up to the same day, so one day holds for the program), capped
    at the period's end. None when no day of the period is billed yet. Comparing only up to this day keeps a lag
    of Cost Explorer from reading as a gap; an account billed nothing on a settled day it ran is a real gap."""
    latest = BilledCost.objects.filter(day__lte=period.last).order_by("-day").values_list("day", flat=True).first()
    if latest is None or latest < period.first:
        return None
    return latest


def billed_settled(*, organization_ids: list[int], period: Period) -> tuple[date | None, dict[int, tuple[int, int]]]:
    """Per organization: (billed, computed running cost), both over the period's settled days, in micro-USD;
    with the day they run through. Three queries."""
    through = billed_settled_through(period)
    if through is None:
        return None, {}
    return through, billed_against_computed(
        billed_rows=BilledCost.objects.filter(organization_id__in=organization_ids),
        usage_rows=UsageDay.objects.filter(organization_id__in=organization_ids),
        first=period.first,
        through=through,
    )


def billed_against_computed(*, billed_rows, usage_rows, first: date, through: date) -> dict[int, tuple[int, int]]:
    """Per organization of `billed_rows`: (billed, computed running cost) from `first` through the settled day
    `through`, in micro-USD; two grouped queries, whatever the number of organizations."""
    billed = dict(
        billed_rows.filter(day__gte=first, day__lte=through)
        .order_by()
        .values("organization_id")
        .annotate(total=Sum("cost_micro_usd"))
        .values_list("organization_id", "total")
    )
    computed = dict(
        usage_rows.filter(day__gte=first, day__lte=through)
        .order_by()
        .values("organization_id")
        .annotate(total=Sum("running_cost_micro_usd"))
        .values_list("organization_id", "total")
    )
    # An organization with no billed row on the settled days (no linked account, or nothing fetched) has no
    # billed figure at all rather than a -100% gap.
    return {org_id: (total, computed.get(org_id) or 0) for org_id, total in billed.items()}
