"""CSV exports: what every download shares."""

from __future__ import annotations

import csv

from django.http import HttpResponse
from django.utils import timezone


def csv_cell(value) -> str:
    text = "" if value is None else str(value)
    # Spreadsheets run cells starting with these as formulas: keep a tenant's text inert.
    return f"'{text}" if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def csv_response(name: str) -> tuple[HttpResponse, csv.Writer]:
    """An attachment `<name>-<YYYYmmdd-HHMM>.csv` (program time) and a writer into it."""
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    stamp = timezone.localtime().strftime("%Y%m%d-%H%M")
    response["Content-Disposition"] = f'attachment; filename="{name}-{stamp}.csv"'
    return response, csv.writer(response)
