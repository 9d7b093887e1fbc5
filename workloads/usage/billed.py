"""Billed against computed: what Cost Explorer billed beside the running cost computed from the rate card, over
the days it has settled only (a lag of Cost Explorer never reads as a gap)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from functools import cached_property

from django.db.models import F, OuterRef, Q, QuerySet, Subquery, Sum
from django.db.models.functions import Abs
from django.db.models.lookups import GreaterThan

from workloads.usage.models import BilledCost, SettledWeek, UsageDay
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


def billed_settled_through(period: Period, billed_cost=BilledCost) -> date | None:
    """The last day of the period Cost Explorer has settled: the latest day any organization was billed for
    (the billing fetch reads every linked account up to the same day, so one day holds for the program), capped
    at the period's end. None when no day of the period is billed yet. Comparing only up to this day keeps a lag
    of Cost Explorer from reading as a gap; an account billed nothing on a settled day it ran is a real gap.
    (`billed_cost`: a migration's historical model.)"""
    latest = billed_cost.objects.filter(day__lte=period.last).order_by("-day").values_list("day", flat=True).first()
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


def _per_organization(rows, column: str, *, first: date, through: date) -> QuerySet:
    return (
        rows.filter(day__gte=first, day__lte=through)
        .order_by()
        .values("organization_id")
        .annotate(total=Sum(column))
        .values("organization_id", "total")
    )


def settled_sum(model, column: str, *, first: date, through: date) -> Subquery:
    """An organization's (OuterRef "pk") `column` summed from `first` through `through`: a side of its billed check,
    as a subquery of an organization queryset."""
    rows = model.objects.filter(organization=OuterRef("pk"))
    return Subquery(_per_organization(rows, column, first=first, through=through).values("total"))


class SettledBilling:
    """Billed against computed over the settled days (`first` through `through`) for every organization of
    `billed_rows` billed then: both sides grouped per organization (two reads of the daily rows, once however
    often the totals, the count and the flags are asked), each compared by BilledCheck. An organization with no
    billed row on the settled days (no linked account, or nothing fetched) is not there: it has no billed figure at
    all rather than a -100% gap."""

    def __init__(self, *, billed_rows, usage_rows, first: date, through: date):
        self._rows = {"billed_rows": billed_rows, "usage_rows": usage_rows, "first": first, "through": through}
        self.through = through

    @cached_property
    def checks(self) -> dict[int, BilledCheck]:
        return {
            org_id: BilledCheck(billed, computed, self.through)
            for org_id, (billed, computed) in billed_against_computed(**self._rows).items()
        }

    def totals(self) -> tuple[int | None, int]:
        """(billed, computed) summed over the organizations billed; billed None when none is."""
        if not self.checks:
            return None, 0
        return sum(c.billed for c in self.checks.values()), sum(c.computed for c in self.checks.values())

    def off_count(self) -> int:
        return len(self.off_ids())

    def off_ids(self) -> list[int]:
        """The organizations billed apart (`pk__in=`)."""
        return sorted(org_id for org_id, check in self.checks.items() if check.off)


def billed_off(billed: str, computed: str) -> Q:
    """BilledCheck.off as a condition on two integer fields or aliases (the weekly summaries' columns)."""
    numerator, denominator = BILLED_TOLERANCE.as_integer_ratio()
    return Q(**{f"{billed}__isnull": False, f"{computed}__gt": 0}) & GreaterThan(
        Abs(F(billed) - F(computed)) * denominator, F(computed) * numerator
    )


def week_summaries_settled(week: date, through: date | None) -> bool:
    """Whether the week's summaries (UsageWeek) hold its billed check as of the settled day `through` a reader
    found: not when Cost Explorer has billed a later day since they were all summed (a billing fetch sums them
    again when it ends)."""
    summed = SettledWeek.objects.filter(week=week).values_list("through", flat=True)
    return bool(summed) and summed[0] == through


def billed_against_computed(*, billed_rows, usage_rows, first: date, through: date) -> dict[int, tuple[int, int]]:
    """Per organization of `billed_rows`: (billed, computed running cost) from `first` through the settled day
    `through`, in micro-USD; two grouped queries. For a few organizations (`billed_rows` cut to them): a program's
    are counted and summed by SettledBilling."""
    billed = {
        row["organization_id"]: row["total"]
        for row in _per_organization(billed_rows, "cost_micro_usd", first=first, through=through)
    }
    computed = {
        row["organization_id"]: row["total"]
        for row in _per_organization(usage_rows, "running_cost_micro_usd", first=first, through=through)
    }
    return {org_id: (total, computed.get(org_id) or 0) for org_id, total in billed.items()}
