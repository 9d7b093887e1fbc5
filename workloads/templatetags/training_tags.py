"""How training figures read on a page: hours to a tenth, throughput grouped, ratios as percentages (the usage
pages' percent filter), the same in the CSV's columns."""

from __future__ import annotations

from decimal import Decimal

from django import template
from django.utils.formats import number_format

from workloads.usage import formats

register = template.Library()


@register.filter
def ratio(value: float | None) -> str:
    """0.318 -> 31.8%."""
    return "—" if value in (None, "") else formats.percent_text(Decimal(str(value)))


@register.filter
def hours(value: float | None) -> str:
    """Hours to a tenth: 1,234.5 h."""
    return "—" if value in (None, "") else f"{number_format(round(value, 1), decimal_pos=1, force_grouping=True)} h"


@register.filter
def grouped(value: float | None, digits: int = 0) -> str:
    """A figure grouped by thousands: 419,430."""
    if value in (None, ""):
        return "—"
    return number_format(round(value, int(digits)), decimal_pos=int(digits), force_grouping=True)
