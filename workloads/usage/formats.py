"""Usage figures as text, one way for pages, CSV exports and the digest alike (so they agree to the cent)."""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal

from django.utils.formats import number_format
from django.utils.translation import gettext as _

from workloads.usage.definitions import hours, usd


def hours_value(microseconds: int | None) -> Decimal | None:
    """Instance-hours to one decimal, as exported."""
    if microseconds is None:
        return None
    return hours(microseconds).quantize(Decimal("0.1"), rounding=ROUND_HALF_EVEN)


def hours_text(microseconds: int | None) -> str:
    value = hours_value(microseconds)
    return "—" if value is None else number_format(value, decimal_pos=1, force_grouping=True)


def usd_text(micro_usd: int | None) -> str:
    if micro_usd is None:
        return "—"
    return "$" + number_format(usd(micro_usd), decimal_pos=2, force_grouping=True)


def local_value(micro_usd: int | None, program) -> Decimal | None:
    if micro_usd is None or program is None:
        return None
    return (usd(micro_usd) * program.usd_exchange_rate).quantize(Decimal("1"), rounding=ROUND_HALF_EVEN)


def local_text(micro_usd: int | None, program) -> str:
    value = local_value(micro_usd, program)
    if value is None:
        return "—"
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
