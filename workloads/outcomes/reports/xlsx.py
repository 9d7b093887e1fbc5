"""A report as an XLSX workbook (openpyxl): a first sheet naming the report, then one sheet per section, its
figures as numbers with their number format (hours to four decimals, dollars to the cent, the program's currency
to the unit, shares as percentages), so a spreadsheet sums them as the pages do."""

from __future__ import annotations

import io

from django.utils.translation import gettext as _
from openpyxl import Workbook
from openpyxl.styles import Font
from openpyxl.utils import get_column_letter

from portal.exports import FORMULA_STARTS
from workloads.outcomes.reports.content import COUNT, DAY, DECIMAL, HOURS, LOCAL, SHARE, USD, Content, period_label

FORMATS = {
    HOURS: "#,##0.0000",
    USD: '"$"#,##0.00',
    SHARE: "0.0%",
    COUNT: "#,##0",
    DAY: "yyyy-mm-dd",
    DECIMAL: "#,##0.00##",
}
LOCAL_FORMATS = {"JPY": '"¥"#,##0', "USD": '"$"#,##0', "EUR": '"€"#,##0'}
SHEET_NAME_MAX = 31  # Excel's limit


def workbook(content: Content) -> bytes:
    book = Workbook()
    cover = book.active
    cover.title = _("Report")[:SHEET_NAME_MAX]
    bold = Font(bold=True)
    cover.append([content.title])
    cover["A1"].font = Font(bold=True, size=14)
    cover.append([_("Program"), content.program.name])
    if content.organization:
        cover.append([_("Organization"), content.organization.name])
    cover.append([_("Period"), period_label(content.period)])
    cover.append([_("Figures as of"), content.as_of.strftime("%Y-%m-%d %H:%M %Z")])
    cover.append(
        [_("Exchange rate (%(currency)s per USD)") % {"currency": content.currency}, content.program.usd_exchange_rate]
    )
    cover.column_dimensions["A"].width = 32
    cover.column_dimensions["B"].width = 40
    local = LOCAL_FORMATS.get(content.currency, "#,##0")
    for section in content.sections:
        sheet = book.create_sheet(section.title[:SHEET_NAME_MAX])
        sheet.append([column.label for column in section.columns])
        for cell in sheet[1]:
            cell.font = bold
        rows = [*section.rows, *([section.total] if section.total else [])]
        for row in rows:
            sheet.append(row)
            for cell in sheet[sheet.max_row]:
                # openpyxl writes text starting with "=" as a formula: a tenant's title or evidence stays text.
                if isinstance(cell.value, str) and cell.value[:1] in FORMULA_STARTS:
                    cell.data_type = "s"
        if section.total:
            for cell in sheet[sheet.max_row]:
                cell.font = bold
        for index, column in enumerate(section.columns, start=1):
            number_format = local if column.kind == LOCAL else FORMATS.get(column.kind)
            letter = get_column_letter(index)
            sheet.column_dimensions[letter].width = max(12, min(40, len(column.label) + 2))
            if number_format:
                for (cell,) in sheet.iter_rows(min_row=2, min_col=index, max_col=index):
                    cell.number_format = number_format
        sheet.freeze_panes = "B2"
        if section.note:
            sheet.append([])
            sheet.append([section.note])
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()
