"""The weekly review on a hand-built week: 2027-W10, Monday 2027-03-08 to Monday 2027-03-15, Asia/Tokyo."""

from datetime import date, datetime
from zoneinfo import ZoneInfo

import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from portal.periods import iso_week, parse_iso_week, this_week
from tests.factories import OrganizationFactory, SupportCaseFactory, WorkloadFactory
from workloads.models import ActionItem
from workloads.records.services import create_workload, update_workload
from workloads.review.figures import build_week
from workloads.review.services import add_action_item, save_review_meeting, set_action_item_done
from workloads.support.services import add_comment, open_case, update_case

pytestmark = pytest.mark.django_db
TOKYO = ZoneInfo("Asia/Tokyo")
W10 = date(2027, 3, 8)


@pytest.fixture(autouse=True)
def long_sessions(settings):
    # The tests travel months away from the login: keep the test client's session valid meanwhile.
    settings.SESSION_COOKIE_AGE = 10 * 365 * 24 * 3600


def at(moment: str):
    """Freeze time at a Tokyo wall-clock time, e.g. at("2027-03-09 10:00")."""
    return time_machine.travel(datetime.fromisoformat(moment).replace(tzinfo=TOKYO), tick=False)


def opened(user, org, title: str, when: str):
    with at(when):
        return open_case(user=user, organization=org, title=title, description=title, category="other")


@pytest.fixture
def week(org, other_org, member, outsider, lead, manager):
    """Two busy orgs and a quiet one; names say what each case should count as."""
    quiet = OrganizationFactory(name="Gamma Lab", slug="gamma")
    beta_lead = lead
    cases = {}
    # Alpha
    cases["a_stale"] = opened(member, org, "a_stale", "2027-02-20 09:00")
    with at("2027-02-25 09:00"):
        add_comment(user=lead, case=cases["a_stale"], body="Looking.")
    cases["a_fresh"] = opened(member, org, "a_fresh", "2027-03-01 09:00")
    with at("2027-03-09 09:00"):
        add_comment(user=lead, case=cases["a_fresh"], body="Update.")
    cases["a_in_and_out"] = opened(member, org, "a_in_and_out", "2027-03-09 10:00")
    with at("2027-03-11 10:00"):
        update_case(user=lead, case=cases["a_in_and_out"], status="resolved")
    cases["a_done_before"] = opened(member, org, "a_done_before", "2027-02-01 10:00")
    with at("2027-03-05 10:00"):
        update_case(user=lead, case=cases["a_done_before"], status="closed")
    cases["a_resolved_then_closed"] = opened(member, org, "a_resolved_then_closed", "2027-02-10 10:00")
    with at("2027-03-04 10:00"):
        update_case(user=lead, case=cases["a_resolved_then_closed"], status="resolved")
    with at("2027-03-09 10:00"):  # closing an already resolved case is not resolving it this week
        update_case(user=member, case=cases["a_resolved_then_closed"], status="closed")
    # Beta
    cases["b_stale_despite_note"] = opened(outsider, other_org, "b_stale_despite_note", "2027-03-01 09:00")
    with at("2027-03-02 09:00"):
        add_comment(user=beta_lead, case=cases["b_stale_despite_note"], body="Asked for logs.")
    with at("2027-03-12 09:00"):
        add_comment(user=beta_lead, case=cases["b_stale_despite_note"], body="ping?", internal=True)
    cases["b_late_sunday"] = opened(outsider, other_org, "b_late_sunday", "2027-03-14 23:30")  # still W10 in Tokyo
    cases["b_next_week"] = opened(outsider, other_org, "b_next_week", "2027-03-15 00:30")  # Sunday in UTC, W11 here
    cases["b_reopened"] = opened(outsider, other_org, "b_reopened", "2027-02-22 09:00")
    with at("2027-03-03 09:00"):
        update_case(user=beta_lead, case=cases["b_reopened"], status="resolved")
    with at("2027-03-10 09:00"):
        update_case(user=outsider, case=cases["b_reopened"], status="open")
    # Workloads: Alpha records one in the week, Beta edits one in the week, Gamma edited one the week before.
    with at("2027-03-10 12:00"):
        create_workload(user=member, organization=org, data={**base_workload(), "name": "alpha-new"})
    beta_workload = WorkloadFactory(organization=other_org, name="beta-run")
    with at("2027-03-13 12:00"):
        update_workload(user=outsider, workload=beta_workload, data={"status": "running", "notes": "go"})
    gamma_workload = WorkloadFactory(organization=quiet, name="gamma-run")
    gamma_member = quiet.memberships.create(user=member).user
    with at("2027-03-06 12:00"):
        update_workload(user=gamma_member, workload=gamma_workload, data={"status": "paused"})
    # Action items: last week's meeting left one open, one done before W10 and one done during W10.
    with at("2027-03-01 10:00"):
        w09, _created = save_review_meeting(user=manager, week_start=date(2027, 3, 1), minutes="W09")
        still_open = add_action_item(user=manager, meeting=w09, text="still_open", organization=org)
        done_before = add_action_item(user=manager, meeting=w09, text="done_before")
        done_during = add_action_item(user=manager, meeting=w09, text="done_during", organization=other_org)
    with at("2027-03-05 10:00"):
        set_action_item_done(user=manager, item=done_before, done=True)
    with at("2027-03-09 10:00"):
        set_action_item_done(user=manager, item=done_during, done=True)
    return {"cases": cases, "quiet": quiet, "items": (still_open, done_before, done_during)}


def base_workload() -> dict:
    from tests.workloads.conftest import WORKLOAD_INPUT

    return dict(WORKLOAD_INPUT)


def titles(cases) -> set[str]:
    return {case.title for case in cases}


def rows(review) -> dict:
    return {row.organization.slug: row for row in review.organizations}


def test_the_weeks_figures_per_org(week, org, other_org, manager):
    from tenants.access import visible_organizations

    with at("2027-03-20 09:00"):  # a past week: figures as of its end
        review = build_week(week_start=W10, organizations=visible_organizations(manager))
    alpha, beta, gamma = rows(review)["alpha"], rows(review)["beta"], rows(review)["gamma"]

    assert titles(alpha.open_cases) == {"a_stale", "a_fresh"}
    assert titles(alpha.stale_cases) == {"a_stale"}
    assert titles(alpha.opened) == {"a_in_and_out"}
    assert titles(alpha.resolved) == {"a_in_and_out"}
    assert [(w.workload.name, w.created) for w in alpha.workloads] == [("alpha-new", True)]

    assert titles(beta.open_cases) == {"b_stale_despite_note", "b_late_sunday", "b_reopened"}
    assert titles(beta.stale_cases) == {"b_stale_despite_note"}  # an internal note is not an update
    assert titles(beta.opened) == {"b_late_sunday"}  # b_next_week is Monday 00:30 in Tokyo
    assert titles(beta.resolved) == set()  # b_reopened was resolved the week before
    [beta_change] = beta.workloads
    assert (beta_change.workload.name, beta_change.created, beta_change.fields) == (
        "beta-run",
        False,
        ["status", "notes"],
    )

    assert gamma.is_quiet and not gamma.workloads  # its edit was in W09
    assert review.totals == {
        "open_cases": 5,
        "stale_cases": 2,
        "opened": 2,
        "resolved": 1,
        "workloads": 2,
        "at_risk": 0,
    }


def test_a_case_resolved_and_reopened_in_the_week_is_open_not_resolved(org, member, lead, manager):
    from tenants.access import visible_organizations

    case = opened(member, org, "back_again", "2027-03-02 09:00")
    again = opened(member, org, "resolved_twice", "2027-03-02 09:00")
    history = {
        case: [("2027-03-09 10:00", "resolved"), ("2027-03-11 10:00", "open")],
        again: [("2027-03-09 10:00", "resolved"), ("2027-03-10 10:00", "open"), ("2027-03-12 10:00", "closed")],
    }
    for each, changes in history.items():
        for when, status in changes:
            with at(when):
                update_case(user=lead, case=each, status=status)
    with at("2027-03-20 09:00"):
        [row] = [r for r in build_week(week_start=W10, organizations=visible_organizations(manager)).organizations]
    assert titles(row.open_cases) == {"back_again"}
    assert titles(row.resolved) == {"resolved_twice"}


def test_last_weeks_open_action_items_carry_forward(week, manager):
    from tenants.access import visible_organizations

    still_open, done_before, done_during = week["items"]
    with at("2027-03-20 09:00"):
        review = build_week(week_start=W10, organizations=visible_organizations(manager))
        next_review = build_week(week_start=date(2027, 3, 15), organizations=visible_organizations(manager))
    assert [i.text for i in review.carried_forward] == ["still_open", "done_during"]
    assert rows(review)["alpha"].action_items == [still_open]
    # The next week carries only what is still open.
    assert [i.text for i in next_review.carried_forward] == ["still_open"]
    assert ActionItem.objects.get(pk=done_during.pk).status == "done"


def test_the_current_week_counts_up_to_now(week, manager):
    from tenants.access import visible_organizations

    with at("2027-03-10 12:00"):
        review = build_week(week_start=W10, organizations=visible_organizations(manager))
    alpha, beta = rows(review)["alpha"], rows(review)["beta"]
    assert titles(alpha.open_cases) == {"a_stale", "a_fresh", "a_in_and_out"}  # not resolved yet at this time
    assert titles(alpha.resolved) == set()
    assert titles(beta.open_cases) == {"b_stale_despite_note", "b_reopened"}
    assert review.is_current


def test_the_review_page_shows_the_figures(week, manager_client):
    with at("2027-03-20 09:00"):
        response = manager_client.get(reverse("review:week", args=["2027-W10"]))
    assert response.status_code == 200
    text = response.text
    assert "Weekly review 2027-W10" in text
    assert "a_stale" in text and "no update for 7 days" in text and "beta-run" in text
    assert "still_open" in text and "from 2027-W09" in text
    assert "b_next_week" not in text.split('id="org-beta"')[1].split("</section>")[0].split("Opened this week")[1]


def test_the_review_is_for_staff_only(member_client, support):
    assert member_client.get(reverse("review:current")).status_code == 403
    assert member_client.get(reverse("review:week", args=["2027-W10"])).status_code == 403
    response = member_client.post(reverse("review:meeting-save", args=["2027-W10"]), {"minutes": "x"})
    assert response.status_code == 403


def test_the_current_review_redirects_to_this_weeks_page(manager_client):
    with at("2027-03-14 23:59"):
        assert manager_client.get(reverse("review:current"))["Location"].endswith("/review/2027-W10/")
    with at("2027-03-15 00:01"):
        assert manager_client.get(reverse("review:current"))["Location"].endswith("/review/2027-W11/")


@pytest.mark.parametrize("week", ["2027-10", "2027-W60", "nonsense", "2031-W01", "0001-W01"])
def test_an_unknown_or_future_week_is_404(manager_client, week):
    with at("2027-03-10 12:00"):
        assert manager_client.get(reverse("review:week", args=[week])).status_code == 404


def test_parse_iso_week():
    assert parse_iso_week("2027-W10") == W10
    assert parse_iso_week("2026-W53") == date(2026, 12, 28)
    with pytest.raises(ValueError):
        parse_iso_week("2027-W1")


def test_recording_the_meeting_and_action_items_from_the_page(manager_client, manager, support, org):
    with at("2027-03-10 12:00"):
        url = reverse("review:meeting-save", args=["2027-W10"])
        response = manager_client.post(
            url,
            {"attendees": [manager.pk, support.pk], "minutes": "Alpha needs storage help."},
            headers={"HX-Request": "true"},
        )
        assert response.status_code == 200 and 'id="meeting"' in response.text and "<html" not in response.text
        add = reverse("review:action-item-add", args=["2027-W10"])
        response = manager_client.post(
            add,
            {"text": "Open a storage case", "organization": org.pk, "open_case": "on", "case_title": "FSx sizing"},
        )
        assert response.status_code == 302
        bad = manager_client.post(add, {"text": "", "case": 99999})
        assert bad.status_code == 400 and "There is no case with this number." in bad.text
    meeting = manager.review_meetings.get()
    assert meeting.iso_week == "2027-W10" and set(meeting.attendees.all()) == {manager, support}
    [item] = meeting.action_items.all()
    assert item.case.title == "FSx sizing" and item.case.organization == org and item.case.opened_by_staff


def test_the_review_page_runs_a_fixed_number_of_queries(manager_client, manager, lead):
    def grow(count):
        for _ in range(count):
            org = OrganizationFactory()
            case = SupportCaseFactory(organization=org)
            add_comment(user=lead, case=case, body="x")
            WorkloadFactory(organization=org)

    url = reverse("review:week", args=[iso_week(this_week())])
    save_review_meeting(user=manager, week_start=this_week())
    grow(2)
    with CaptureQueriesContext(connection) as small:
        assert manager_client.get(url).status_code == 200
    grow(12)
    with CaptureQueriesContext(connection) as large:
        manager_client.get(url)
    assert len(large) == len(small)


def test_the_review_table_sorts_by_its_columns_in_place(week, manager_client, org, other_org):
    """?sort=open_cases / -open_cases, the table's own part swapped by htmx."""
    url = reverse("review:week", args=["2027-W10"])
    for sort, first in (("-open_cases", other_org.name), ("open_cases", "Gamma Lab"), ("organization", org.name)):
        with at("2027-03-20 09:00"):
            page = manager_client.get(url, {"sort": sort}, headers={"HX-Request": "true", "HX-Target": "review-orgs"})
        assert page.status_code == 200 and 'id="review-orgs"' in page.text and "<html" not in page.text
        rows = [row.record.organization.name for row in page.context["org_table"].rows]
        assert rows[0] == first, sort
    assert 'data-sort="idle_cost"' in page.text and "sort=-organization" in page.text
