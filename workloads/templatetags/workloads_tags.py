"""Small display helpers for workload sizes and sortable table headers."""

from django import template
from django.utils.html import format_html
from django.utils.http import urlencode

from workloads.health.incidents import event_summary
from workloads.validation.nccl import format_size

register = template.Library()

SCALES = ((10**12, "T"), (10**9, "B"), (10**6, "M"), (10**3, "K"))


@register.filter
def humancount(value) -> str:
    """405000000000 -> '405B', 1500000000000 -> '1.5T': sizes as people say them."""
    if value in (None, ""):
        return "—"
    value = int(value)
    for scale, suffix in SCALES:
        if value >= scale:
            return f"{value / scale:.3g}{suffix}"
    return str(value)


@register.simple_tag(takes_context=True)
def sort_link(context, key: str, label: str) -> str:
    """A column header that sorts by `key`, reversing on a second click; keeps the other filters."""
    request = context["request"]
    current = context.get("sort", "")
    descending = current == key
    params = request.GET.copy()
    params.pop("page", None)
    params["sort"] = f"-{key}" if descending else key
    arrow = "▲" if current == key else "▼" if current == f"-{key}" else ""
    query = urlencode(params, doseq=True)
    return format_html(
        '<a href="?{}" hx-get="?{}" hx-target="closest .htmx-table" hx-swap="outerHTML" hx-push-url="true">{}{}</a>',
        query,
        query,
        label,
        format_html('&nbsp;<span aria-hidden="true">{}</span>', arrow) if arrow else "",
    )


@register.filter
def binary_size(value) -> str:
    """A message size in binary units (16 GiB), as nccl-tests users say it; Django's filesizeformat says "GB"."""
    return format_size(int(value)) if value is not None else ""


@register.filter
def event_text(event) -> str:
    """A health event as the reader's language says it (its message was stored in English): see event_summary."""
    return event_summary(event)
