"""Budgets against spend and forecast, with every figure computed by hand from the daily rows of conftest.py, on
Monday Feb 15 at 12:00. Spent (computed): 14 × 100 + 7 × (1,500 + 500 + 2,000 + 1,000) + 300 = $36,700.
Left in the cycle: Feb 15 12:00 → Jul 1 00:00 = 135.5 days. Forecast: 36,700 + 1,000 × 135.5 = $172,200; range at
the slowest week ($500) and the busiest ($2,000): $104,450 – $307,700.
"""

from datetime import date, datetime, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest
import time_machine
from django.core import mail

from tenants.models import Membership
from tests.factories import MembershipFactory
from tests.outcomes.conftest import USD, daily_cost
from workloads.outcomes import alerts, budget
from workloads.outcomes.models import Budget, BudgetAlert
from workloads.outcomes.services import set_budget
from workloads.usage.models import BilledCost, UsageDay

JST = ZoneInfo("Asia/Tokyo")
NOW = datetime(2027, 2, 15, 12, 0, tzinfo=JST)


def standing_of(program, organization):
    rows, whole = budget.standings(program, organizations=[organization], with_program=True, now=NOW)
    return rows[0], whole


def test_spent_forecast_and_its_range_are_the_hand_computed_figures(program, alpha):
    standing, whole = standing_of(program, alpha)
    assert standing.spent == 36_700 * USD
    assert standing.billed_through is None
    assert standing.forecast.days_left == Decimal("135.5")
    assert standing.forecast.rate == 1_000 * USD
    assert (standing.forecast.at_end, standing.forecast.low, standing.forecast.high) == (
        172_200 * USD,
        104_450 * USD,
        307_700 * USD,
    )
    # The program's is the sum of its organizations' (one here).
    assert whole.spent == standing.spent and whole.forecast == standing.forecast


def test_billed_days_count_as_billed_and_the_rest_as_computed_as_the_usage_page_does(program, alpha, manager, client):
    # Cost Explorer settled through Feb 13 and billed $100 more than computed on that day.
    day = date(2027, 1, 4)
    while day <= date(2027, 2, 13):
        billed = daily_cost(day) + (100 if day == date(2027, 2, 13) else 0)
        BilledCost.objects.create(
            organization=alpha, day=day, instance_type="p5.48xlarge", cost_micro_usd=billed * USD, fetched_at=NOW
        )
        day += timedelta(days=1)
    standing, _ = standing_of(program, alpha)
    assert standing.billed_through == date(2027, 2, 13)
    assert standing.spent == 36_800 * USD  # billed 35,500 through Feb 13 + computed 1,000 + 300 after
    # The usage page's program-to-date figures for the same organization: billed + not yet billed.
    with time_machine.travel(NOW, tick=False):
        client.force_login(manager)
        response = client.get("/program/usage/export.csv?period=program")
    text = b"".join(response.streaming_content).decode("utf-8-sig").splitlines()
    header, row = text[0].split(","), next(line for line in text[1:] if ",alpha-lab," in line).split(",")
    values = dict(zip(header, row, strict=True))
    assert Decimal(values["billed_cost_usd"]) + Decimal(values["not_yet_billed_cost_usd"]) == Decimal("36800.00")


def test_no_whole_day_in_the_cycle_yet_means_no_forecast(program, alpha):
    first_day = datetime(2027, 1, 4, 9, 0, tzinfo=JST)
    rows, _ = budget.standings(program, organizations=[alpha], with_program=False, now=first_day)
    assert rows[0].forecast is None
    assert rows[0].spent == 100 * USD  # that day's row, as the usage page reads it


def test_a_budget_in_yen_reads_in_dollars_at_the_program_rate(program, alpha, manager):
    set_budget(
        user=manager, program=program, organization=alpha, data={"amount": Decimal("15000000"), "currency": "JPY"}
    )
    standing, _ = standing_of(program, alpha)
    assert standing.budget_micro_usd == 100_000 * USD  # ¥15,000,000 ÷ 150
    assert standing.spent_share == Decimal("0.367")
    assert standing.forecast_over  # $172,200 > $100,000
    third = Budget(amount=Decimal("5000000"), currency="JPY")
    assert budget.budget_micro_usd(third, program) == 33_333_333_333  # $33,333.333333, to the micro-dollar


def test_alerts_fire_once_mail_managers_and_admins_and_clear_when_the_budget_grows(
    program, alpha, manager, eager_celery, django_capture_on_commit_callbacks
):
    admin = MembershipFactory(organization=alpha, role=Membership.Role.ADMIN).user
    MembershipFactory(organization=alpha, role=Membership.Role.MEMBER)  # a member hears nothing
    set_budget(
        user=manager, program=program, organization=alpha, data={"amount": Decimal("5000000"), "currency": "JPY"}
    )
    fired = alerts.check_budgets(now=NOW)
    # $36,700 spent of $33,333.33: past 80 % and 100 %; the forecast passes it too.
    kinds = sorted(BudgetAlert.objects.filter(pk__in=fired).values_list("kind", "percent"))
    assert kinds == [("forecast", 100), ("spent", 80), ("spent", 100)]
    assert alerts.check_budgets(now=NOW) == []  # run again: nothing new
    for alert_id in fired:
        alerts.mail_alert(alert_id=alert_id)
        assert alerts.mail_alert(alert_id=alert_id) == 0  # a second send sends nothing
    recipients = sorted({message.to[0] for message in mail.outbox})
    assert recipients == sorted([manager.email, admin.email])
    assert len(mail.outbox) == 6
    subjects = {message.subject for message in mail.outbox}
    assert (
        "[FM Program] Budget alert: Alpha Research has spent 100% of its budget: ¥5,505,000 of ¥5,000,000" in subjects
    )

    set_budget(user=manager, program=program, organization=alpha, data={"amount": Decimal("60000000")})
    assert alerts.check_budgets(now=NOW) == []  # $400,000: under 80 % and over the forecast
    assert not BudgetAlert.objects.filter(cleared_at__isnull=True).exists()


def test_thresholds_are_checked_and_the_change_is_audited(program, alpha, manager, member):
    from django.core.exceptions import PermissionDenied, ValidationError

    from tenants.models import AuditEvent

    with pytest.raises(ValidationError) as error:
        set_budget(
            user=manager,
            program=program,
            organization=alpha,
            data={"amount": Decimal("1"), "alert_percents": "80, lots"},
        )
    assert "alert_percents" in error.value.message_dict
    with pytest.raises(PermissionDenied):
        set_budget(user=member, program=program, organization=alpha, data={"amount": Decimal("1")})
    set_budget(
        user=manager, program=program, organization=alpha, data={"amount": Decimal("1"), "alert_percents": "100, 50"}
    )
    set_budget(user=manager, program=program, organization=alpha, data={"amount": Decimal("2")})
    events = list(AuditEvent.objects.filter(target_type="budget").order_by("pk").values_list("action", "changes"))
    assert events[0][0] == "budget.set" and events[0][1]["alert_percents"] == [[80, 100], [50, 100]]
    assert events[1] == ("budget.changed", {"amount": ["1.00", "2.00"]})


def test_an_open_alert_shows_on_the_landing_page_until_it_clears(program, alpha, manager, manager_client):
    set_budget(user=manager, program=program, organization=alpha, data={"amount": Decimal("5000000")})
    alerts.check_budgets(now=NOW)
    page = manager_client.get("/program/").content.decode()
    assert "Alpha Research has spent 80% of its budget" in page
    BudgetAlert.objects.update(cleared_at=NOW)
    assert "Alpha Research has spent" not in manager_client.get("/program/").content.decode()


def test_the_budget_form_shows_its_errors_and_saves_for_a_manager_only(program, alpha, manager_client, client):
    url = f"/orgs/{alpha.slug}/outcomes/budget/"
    response = manager_client.post(url, {"amount": "-5", "currency": "JPY", "alert_percents": "80, 2000"})
    assert response.status_code == 400
    body = response.content.decode()
    assert "At most five thresholds, each from 1 to 1000 percent." in body
    assert "Ensure this value is greater than or equal to 0.01." in body
    response = manager_client.post(url, {"amount": "15000000", "currency": "JPY", "alert_percents": "90"})
    assert response.status_code == 302 and response["Location"] == f"/orgs/{alpha.slug}/outcomes/"
    budget = Budget.objects.get(organization=alpha)
    assert (budget.amount, budget.alert_percents) == (Decimal("15000000.00"), [90])
    member = MembershipFactory(organization=alpha, role=Membership.Role.ADMIN).user
    client.force_login(member)
    assert client.get(url).status_code == 403
    assert "¥15,000,000" in client.get(f"/orgs/{alpha.slug}/outcomes/").content.decode()


def test_an_alert_stands_while_spend_wobbles_and_clears_only_with_a_new_budget(program, alpha, manager):
    set_budget(user=manager, program=program, organization=alpha, data={"amount": Decimal("6600000")})  # $44,000
    # $36,700 spent: 83 % of $44,000, past 80 %; the forecast passes it too.
    first = alerts.check_budgets(now=NOW)
    assert sorted(BudgetAlert.objects.filter(pk__in=first).values_list("kind", "percent")) == [
        ("forecast", 100),
        ("spent", 80),
    ]
    # A billing correction takes $2,000 off Feb 15's day... the figure falls under 80 % for an hour, then back.
    day = UsageDay.objects.get(organization=alpha, day=date(2027, 2, 14))
    UsageDay.objects.filter(pk=day.pk).update(running_cost_micro_usd=0)
    assert alerts.check_budgets(now=NOW) == []
    UsageDay.objects.filter(pk=day.pk).update(running_cost_micro_usd=1_000 * USD)
    assert alerts.check_budgets(now=NOW) == []
    assert BudgetAlert.objects.count() == 2 and not BudgetAlert.objects.filter(cleared_at__isnull=False).exists()
    set_budget(user=manager, program=program, organization=alpha, data={"amount": Decimal("60000000")})
    alerts.check_budgets(now=NOW)
    assert not BudgetAlert.objects.filter(cleared_at__isnull=True).exists()


def test_a_budget_in_yen_reads_as_set_never_a_yen_off_through_dollars(program, alpha, manager, manager_client):
    set_budget(user=manager, program=program, organization=alpha, data={"amount": Decimal("1000001")})
    standing, _ = standing_of(program, alpha)
    assert standing.budget_local == Decimal("1000001.00")
    assert budget.budget_micro_usd(standing.budget, program) == 6_666_673_333  # ¥1,000,001 ÷ 150
    assert "¥1,000,001" in manager_client.get("/outcomes/").content.decode()
