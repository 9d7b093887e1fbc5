"""Usage figures as values and text, one way for pages, CSV exports, the API and the digest alike.

Values (CSV, API) are exact: every figure is a sum of daily rows, each kept to the grain (a ten-thousandth of an
hour) and the cent (workloads.usage.definitions), so hours have four decimals and dollars two, and the rows of a
file add up to its totals exactly. Text (pages, the digest, the charts' tables) rounds hours to a tenth for people
to read, from the exact value; dollars are never rounded further than the cent they are kept to."""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal

from django.utils.formats import number_format
from django.utils.translation import gettext as _

from workloads.usage.definitions import HOUR_PLACES, hours, usd


def hours_value(microseconds: int | None) -> Decimal | None:
    """Instance- or accelerator-hours to four decimals (0.36 s), as CSV and API carry them: exact for every sum
    of daily rows (38.25 h reads 38.2500, never 38.2)."""
    if microseconds is None:
        return None
    return hours(microseconds).quantize(HOUR_PLACES, rounding=ROUND_HALF_EVEN)


def hours_text(microseconds: int | None) -> str:
    """Hours for a person: the exact value rounded (half-even) to a tenth, grouped (1,234.5)."""
    if microseconds is None:
        return "—"
    value = hours(microseconds).quantize(Decimal("0.1"), rounding=ROUND_HALF_EVEN)
    return number_format(value, decimal_pos=1, force_grouping=True)


def usd_text(micro_usd: int | None) -> str:
    if micro_usd is None:
        return "—"
    return "$" + number_format(usd(micro_usd), decimal_pos=2, force_grouping=True)


def local_value(micro_usd: int | None, program) -> Decimal | None:
    """A dollar figure in the program's currency: converted at its rate, rounded (half-even) to the unit. A reading
    aid beside the exact dollars: each figure is converted on its own, so converted rows may differ from the
    converted total by a unit per row, where the dollars never do."""
    if micro_usd is None or program is None:
        return None
    return (usd(micro_usd) * program.usd_exchange_rate).quantize(Decimal("1"), rounding=ROUND_HALF_EVEN)


def local_text(micro_usd: int | None, program) -> str:
    return local_amount_text(local_value(micro_usd, program), program)


def local_amount_text(value: Decimal | None, program) -> str:
    """An amount already in the program's currency (a budget set in yen), to the unit."""
    if value is None:
        return "—"
    value = value.quantize(Decimal("1"), rounding=ROUND_HALF_EVEN)
    symbol = {"JPY": "¥", "USD": "$", "EUR": "€"}.get(program.currency, program.currency + " ")
    return symbol + number_format(value, decimal_pos=0, force_grouping=True)


def percent_value(ratio: Decimal | None) -> Decimal | None:
    return None if ratio is None else (ratio * 100).quantize(Decimal("0.1"), rounding=ROUND_HALF_EVEN)


def percent_text(ratio: Decimal | None) -> str:
    value = percent_value(ratio)
    return "—" if value is None else f"{number_format(value, decimal_pos=1)}%"


def signed_percent_text(ratio: Decimal | None) -> str:
    """A relative difference, signed: -40.1% (billed against computed cost); not percentage points."""
    value = percent_value(ratio)
    if value is None:
        return "—"
    return ("+" if value > 0 else "") + f"{number_format(value, decimal_pos=1)}%"


def points_text(change: Decimal | None) -> str:
    value = percent_value(change)
    if value is None:
        return "—"
    return _("%(value)s pts") % {"value": ("+" if value > 0 else "") + number_format(value, decimal_pos=1)}
