"""CSV exports: what every download shares, so a file opens the same in a spreadsheet, pandas or Python's csv.

- The header is the first row (no preamble): whatever a file is about (its period) is in its name and in columns.
- A UTF-8 byte-order mark comes first, so Excel opens Japanese names correctly (pandas and `utf-8-sig` skip it).
- Numbers stay numbers, negatives included: the formula guard quotes text cells only, since a spreadsheet runs a
  text cell starting with = + - @ as a formula, while a number such as -0.5 is just a number.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from datetime import date, datetime
from decimal import Decimal

from django.http import HttpResponse, StreamingHttpResponse
from django.utils import timezone

BOM = "\ufeff"
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value) -> str:
    """One cell as written: numbers as they are, dates in ISO form, None empty, and text that a spreadsheet would
    run as a formula prefixed with ' (inert)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float, Decimal)):
        return str(value)  # a number, negative or not, is never a formula
    if isinstance(value, datetime):
        return timezone.localtime(value).isoformat() if timezone.is_aware(value) else value.isoformat()
    if isinstance(value, date):
        return value.isoformat()
    text = str(value)
    # Spreadsheets run cells starting with these as formulas: keep a tenant's text inert.
    return f"'{text}" if text[:1] in FORMULA_STARTS else text


class CsvWriter:
    """A csv writer whose every cell goes through csv_cell: no export can forget the guard, nor apply it to a
    number."""

    def __init__(self, response: HttpResponse):
        self._writer = csv.writer(response)

    def writerow(self, values: Iterable) -> None:
        self._writer.writerow([csv_cell(value) for value in values])

    def writerows(self, rows: Iterable[Iterable]) -> None:
        for row in rows:
            self.writerow(row)


def _attachment(response: HttpResponse | StreamingHttpResponse, name: str):
    stamp = timezone.localtime().strftime("%Y%m%d-%H%M")
    response["Content-Disposition"] = f'attachment; filename="{name}-{stamp}.csv"'
    return response


def csv_response(name: str) -> tuple[HttpResponse, CsvWriter]:
    """An attachment `<name>-<YYYYmmdd-HHMM>.csv` (program time), its byte-order mark written, and a writer into
    it. Put the period a file covers in `name` (e.g. usage-2027-W10)."""
    response = _attachment(HttpResponse(content_type="text/csv; charset=utf-8"), name)
    response.write(BOM)
    return response, CsvWriter(response)


class _Line:
    """What csv.writer writes into when each line is sent as it is made: the line itself."""

    def write(self, line: str) -> str:
        return line


def csv_stream(name: str, header: list[str], rows: Iterable[Iterable]) -> StreamingHttpResponse:
    """The same file as csv_response's, sent line by line as `rows` yields them: a file of thousands of rows is
    never held whole in memory, and its first bytes leave before its last rows are read."""
    writer = csv.writer(_Line())

    def lines():
        yield BOM + writer.writerow(header)
        for row in rows:
            yield writer.writerow([csv_cell(value) for value in row])

    return _attachment(StreamingHttpResponse(lines(), content_type="text/csv; charset=utf-8"), name)
