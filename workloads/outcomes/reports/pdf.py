"""A report as a PDF: an HTML page rendered by Django and laid out by WeasyPrint, in the report's language, with
Debian's IPA Gothic for Japanese. WeasyPrint needs Pango from the system; without it the report keeps its XLSX and
says why it has no PDF (`PdfUnavailable`)."""

from __future__ import annotations

from pathlib import Path

from django.template.loader import render_to_string
from django.utils.formats import number_format

from workloads.outcomes.reports.content import (
    COUNT,
    DAY,
    DECIMAL,
    HOURS,
    LOCAL,
    SHARE,
    TEXT,
    USD,
    Content,
    period_label,
)

# Its own file, not a <style> block: the templates carry no inline code (tests/test_security_headers.py).
STYLESHEET = Path(__file__).with_name("report.css")


class PdfUnavailable(Exception):
    """WeasyPrint could not load (its system libraries are missing)."""


def cell_text(value, kind: str, currency_symbol: str) -> str:
    """A value as the pages print it."""
    if value is None or value == "":
        return "—"
    if kind == HOURS:
        return number_format(value, decimal_pos=1, force_grouping=True)
    if kind == USD:
        return "$" + number_format(value, decimal_pos=2, force_grouping=True)
    if kind == LOCAL:
        return currency_symbol + number_format(value, decimal_pos=0, force_grouping=True)
    if kind == SHARE:
        return number_format(value * 100, decimal_pos=1) + "%"
    if kind == COUNT:
        return number_format(value, force_grouping=True)
    if kind == DAY:
        return value.isoformat()
    if kind == DECIMAL:
        return number_format(value, force_grouping=True)
    return str(value)


def document(content: Content, language: str) -> bytes:
    try:
        from weasyprint import CSS, HTML
    except OSError as error:  # Pango or one of its libraries is not installed
        raise PdfUnavailable(str(error)) from error
    symbol = {"JPY": "¥", "USD": "$", "EUR": "€"}.get(content.currency, content.currency + " ")

    def cells(row, section) -> list[tuple[str, bool]]:
        return [(cell_text(v, c.kind, symbol), c.kind != TEXT) for v, c in zip(row, section.columns, strict=True)]

    sections = [
        {
            "section": section,
            "rows": [cells(row, section) for row in section.rows],
            "total": cells(section.total, section) if section.total else None,
        }
        for section in content.sections
    ]
    html = render_to_string(
        "workloads/outcomes/report.html",
        {"content": content, "sections": sections, "period": period_label(content.period), "language": language},
    )
    return HTML(string=html).write_pdf(stylesheets=[CSS(filename=str(STYLESHEET))])
