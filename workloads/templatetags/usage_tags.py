"""How usage figures read on a page: instance-hours grouped, money to the cent, utilization as a percentage.
The CSV exports format with the same functions (workloads.usage.exports), so page and file agree."""

from decimal import Decimal

from django import template

from workloads.usage import formats

register = template.Library()


@register.filter
def instance_hours(microseconds) -> str:
    """Instance-microseconds as hours: 1,234.5."""
    return formats.hours_text(microseconds)


@register.filter
def dollars(micro_usd) -> str:
    return formats.usd_text(micro_usd)


@register.filter
def in_currency(micro_usd, program) -> str:
    """The amount in the program's currency at its rate (¥1,234,567)."""
    return formats.local_text(micro_usd, program)


@register.filter
def local_amount(value, program) -> str:
    """An amount in the program's currency as it is (a budget set in yen): ¥1,000,001."""
    return formats.local_amount_text(value, program)


@register.filter
def percent(ratio: Decimal | None) -> str:
    return formats.percent_text(ratio)


@register.filter
def signed_percent(ratio: Decimal | None) -> str:
    return formats.signed_percent_text(ratio)


@register.filter
def points(change: Decimal | None) -> str:
    """A change of utilization in percentage points: +12.3 pts."""
    return formats.points_text(change)


@register.filter
def band_class(ratio: Decimal | None) -> str:
    """The utilization's band as a class, `band-1` (lowest) … `band-4` (75–100%), `band-over` past 100% (ran
    beyond the allocation), or `band-none` without an allocation: static/css/portal.css colours each as the charts
    do (the page's Content-Security-Policy refuses a style attribute carrying the colour itself)."""
    from portal.charts import OVER
    from workloads.usage.charts import BANDS, band

    color = band(ratio)
    if ratio is None:
        return "band-none"
    if color == OVER:
        return "band-over"
    return f"band-{[color for _limit, color, _label in BANDS].index(color) + 1}"
