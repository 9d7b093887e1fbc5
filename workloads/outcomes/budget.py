"""Budgets against spend, defined once: the outcomes pages, the API, the alerts and the landing page read these.

- **Spent to date** of an organization: what ran, as the usage pages count it for the program to date — what AWS
  billed (Cost Explorer) over the days it has settled, and the running cost computed from the rate card after
  them (workloads.usage.billed). Without a billed figure it is the computed running cost. The program's is the sum
  of its organizations'. (The program's reserved capacity that nobody ran is idle cost on the usage pages, not
  spend of any organization.)
- **Recent rate**: the computed running cost of the last 7 whole days (yesterday and the 6 before), a day's
  average. The **forecast** to the end of the cycle is spent + that rate × the time left until the program's last
  day ends; its **range** takes the lowest and the highest of the last four such 7-day windows (those inside the
  cycle), so a quiet or a busy week widens it. No whole day in the cycle yet: no forecast.
- **Budget in dollars**: a budget set in yen is read at the program's exchange rate (yen per dollar), to the
  micro-dollar, half to even; shown in both currencies.

Money is integer micro-USD as in workloads.usage.definitions, so sums are exact.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from fractions import Fraction

from django.db.models import Sum
from django.utils import timezone

from portal.periods import day_start
from tenants.models import Organization, Program
from workloads.outcomes.models import Budget
from workloads.usage.billed import billed_settled
from workloads.usage.formats import local_value
from workloads.usage.models import UsageDay
from workloads.usage.periods import Period

WINDOW_DAYS = 7
JUST_BEFORE = timedelta(microseconds=1)
WINDOWS = 4
MICRO = 1_000_000


def to_micro(value: Fraction) -> int:
    """Micro-USD, half to even (Fraction's round)."""
    return round(value)


def budget_micro_usd(budget: Budget, program: Program) -> int:
    """The budget in micro-USD: as set in dollars, or in yen over the program's exchange rate (yen per dollar)."""
    amount = Fraction(budget.amount) * MICRO
    if budget.currency != Budget.Currency.USD:
        amount /= Fraction(program.usd_exchange_rate)
    return to_micro(amount)


@dataclass(frozen=True)
class Forecast:
    at_end: int  # micro-USD spent by the end of the cycle at the recent rate
    low: int
    high: int
    rate: int  # micro-USD a day, the last 7 whole days'
    days_left: Decimal


@dataclass
class Standing:
    """One budget (or an organization without one) against its spend."""

    program: Program
    organization: Organization | None
    budget: Budget | None
    spent: int  # micro-USD to date
    billed_through: date | None
    forecast: Forecast | None

    @property
    def budget_micro_usd(self) -> int | None:
        return budget_micro_usd(self.budget, self.program) if self.budget else None

    @property
    def budget_local(self) -> Decimal | None:
        """The budget in the program's currency: as set when set in it (never a unit off through dollars)."""
        if self.budget is None:
            return None
        if self.budget.currency == self.program.currency:
            return self.budget.amount
        return local_value(self.budget_micro_usd, self.program)

    @property
    def left_local(self) -> Decimal | None:
        budget = self.budget_local
        return None if budget is None else budget - local_value(self.spent, self.program)

    @property
    def spent_share(self) -> Decimal | None:
        total = self.budget_micro_usd
        return Decimal(self.spent) / Decimal(total) if total else None

    @property
    def forecast_share(self) -> Decimal | None:
        total = self.budget_micro_usd
        return Decimal(self.forecast.at_end) / Decimal(total) if total and self.forecast else None

    @property
    def left(self) -> int | None:
        total = self.budget_micro_usd
        return None if total is None else total - self.spent

    @property
    def over(self) -> bool:
        return self.budget is not None and self.spent > self.budget_micro_usd

    @property
    def forecast_over(self) -> bool:
        return self.budget is not None and self.forecast is not None and self.forecast.at_end > self.budget_micro_usd


def forecast(*, spent: int, daily: dict[date, int], program: Program, today: date, now: datetime) -> Forecast | None:
    """Spent + the recent daily rate × the time left in the cycle; the range from the last four 7-day windows."""
    ends_at = day_start(program.ends_on + timedelta(days=1))
    if now >= ends_at:
        return Forecast(at_end=spent, low=spent, high=spent, rate=0, days_left=Decimal(0))
    rates: list[Fraction] = []
    for window in range(WINDOWS):
        last = today - timedelta(days=1 + WINDOW_DAYS * window)
        first = last - timedelta(days=WINDOW_DAYS - 1)
        if first < program.starts_on:
            break
        total = sum(daily.get(first + timedelta(days=d), 0) for d in range(WINDOW_DAYS))
        rates.append(Fraction(total, WINDOW_DAYS))
    if not rates:
        return None
    left = ends_at - max(now, day_start(program.starts_on))
    days_left = Fraction(left.days * 86_400 + left.seconds, 86_400)
    return Forecast(
        at_end=spent + to_micro(rates[0] * days_left),
        low=spent + to_micro(min(rates) * days_left),
        high=spent + to_micro(max(rates) * days_left),
        rate=to_micro(rates[0]),
        days_left=Decimal(days_left.numerator) / Decimal(days_left.denominator),
    )


def spent_to_date(
    program: Program, *, organization_ids: list[int] | None, today: date
) -> tuple[dict[int, int], date | None]:
    """Micro-USD each organization spent in the program to date (billed where settled, computed after), with the
    last settled day. `organization_ids` None: every organization that ran. Three queries."""
    period = Period("program", program.starts_on, max(min(today, program.ends_on), program.starts_on))
    rows = UsageDay.objects.filter(day__gte=period.first, day__lte=period.last)
    if organization_ids is not None:
        rows = rows.filter(organization_id__in=organization_ids)
    running = {
        row["organization_id"]: row["cost"] or 0
        for row in rows.order_by().values("organization_id").annotate(cost=Sum("running_cost_micro_usd"))
    }
    through, settled = billed_settled(organization_ids=list(running), period=period)
    spent = {}
    for organization_id, cost in running.items():
        billed, computed = settled.get(organization_id, (None, 0))
        spent[organization_id] = cost if billed is None else billed + cost - computed
    return spent, through


def recent_daily(program: Program, *, organization_ids: list[int] | None, today: date) -> dict[int, dict[date, int]]:
    """Computed running cost per organization and day over the forecast's windows (before today). One query."""
    first = today - timedelta(days=WINDOW_DAYS * WINDOWS)
    rows = UsageDay.objects.filter(day__gte=max(first, program.starts_on), day__lt=today)
    if organization_ids is not None:
        rows = rows.filter(organization_id__in=organization_ids)
    daily: dict[int, dict[date, int]] = defaultdict(dict)
    for row in rows.order_by().values("organization_id", "day").annotate(cost=Sum("running_cost_micro_usd")):
        daily[row["organization_id"]][row["day"]] = row["cost"] or 0
    return daily


def standings(
    program: Program, *, organizations: list[Organization], with_program: bool, now: datetime | None = None
) -> tuple[list[Standing], Standing | None]:
    """Each of `organizations` against its budget (None when it has none), and the program's against its own (the
    sum of every organization's spend, read only with `with_program`). A fixed number of queries."""
    now = now or timezone.now()
    today = timezone.localdate(now)
    ids = None if with_program else [o.pk for o in organizations]
    # Spent through the day `now` is in; at midnight exactly (a report as of a month's end), through the day before.
    spent, through = spent_to_date(program, organization_ids=ids, today=timezone.localdate(now - JUST_BEFORE))
    daily = recent_daily(program, organization_ids=ids, today=today)
    budgets = {
        b.organization_id: b
        for b in Budget.objects.filter(program=program).filter(
            **({} if with_program else {"organization_id__in": [o.pk for o in organizations]})
        )
    }
    rows = []
    for organization in organizations:
        organization_spent = spent.get(organization.pk, 0)
        rows.append(
            Standing(
                program=program,
                organization=organization,
                budget=budgets.get(organization.pk),
                spent=organization_spent,
                billed_through=through,
                forecast=forecast(
                    spent=organization_spent,
                    daily=daily.get(organization.pk, {}),
                    program=program,
                    today=today,
                    now=now,
                ),
            )
        )
    if not with_program:
        return rows, None
    program_daily: dict[date, int] = defaultdict(int)
    for days in daily.values():
        for day, cost in days.items():
            program_daily[day] += cost
    total = sum(spent.values())
    whole = Standing(
        program=program,
        organization=None,
        budget=budgets.get(None),
        spent=total,
        billed_through=through,
        forecast=forecast(spent=total, daily=program_daily, program=program, today=today, now=now),
    )
    return rows, whole


def budget_standings(budgets: list[Budget], *, now: datetime | None = None) -> dict[int, Standing]:
    """Each of `budgets`' standing, by budget id (the API's budgets): one standings() call per program, the
    program's own read only when one of them is the program's budget."""
    by_program: dict[int, list[Budget]] = defaultdict(list)
    for budget in budgets:
        by_program[budget.program_id].append(budget)
    now = now or timezone.now()
    found = {}
    for rows in by_program.values():
        organizations = [budget.organization for budget in rows if budget.organization_id]
        with_program = any(budget.organization_id is None for budget in rows)
        org_rows, whole = standings(rows[0].program, organizations=organizations, with_program=with_program, now=now)
        by_organization = {standing.organization.pk: standing for standing in org_rows}
        for budget in rows:
            found[budget.pk] = whole if budget.organization_id is None else by_organization[budget.organization_id]
    return found
