"""Milestones: measured ones follow their workload's tokens by themselves; the others are reported by the
organization and confirmed by program staff; each page and file shows only the reader's own; every step is in the
history. Figures by hand: the run trained 600 B of 1 T tokens, 50 B in the last 7 days."""

from datetime import date, datetime, timedelta

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from tenants.models import AuditEvent
from tests.factories import MilestoneFactory, WorkloadFactory
from tests.outcomes.conftest import JST, NOW, B
from workloads.outcomes import services
from workloads.outcomes.milestones import milestone_states
from workloads.outcomes.models import Milestone


def test_a_measured_milestone_is_on_track_at_risk_or_met_by_its_tokens(org, trained):
    # 400 B to go at 50 B a week: 8 weeks from Feb 15 12:00 is Apr 12 12:00.
    in_time = MilestoneFactory(organization=org, workload=trained, target_tokens=1000 * B, due_on=date(2027, 4, 12))
    late = MilestoneFactory(organization=org, workload=trained, target_tokens=1000 * B, due_on=date(2027, 4, 11))
    done = MilestoneFactory(organization=org, workload=trained, target_tokens=500 * B, due_on=date(2027, 1, 31))
    states = {s.milestone.pk: s for s in milestone_states([in_time, late, done], now=NOW)}
    assert states[in_time.pk].state == "on_track"
    assert states[in_time.pk].finish.on == datetime(2027, 4, 12, 12, 0, tzinfo=JST)
    assert states[late.pk].state == "at_risk"
    assert states[done.pk].state == "met" and states[done.pk].tokens == 600 * B
    assert states[in_time.pk].fraction == 0.6

    assert services.follow_measured_milestones(now=NOW) == 1
    done.refresh_from_db()
    assert done.status == Milestone.Status.MET and done.met_at == NOW - timedelta(hours=1)  # its latest point
    assert services.follow_measured_milestones(now=NOW) == 0  # once
    assert AuditEvent.objects.filter(target_type="milestone", target_id=done.pk, action="milestone.met").count() == 1


def test_a_reported_milestone_is_confirmed_or_returned_by_staff_only(org, member, manager, support, other_org):
    milestone = MilestoneFactory(organization=org, due_on=date(2027, 3, 31))
    with pytest.raises(ValidationError):
        services.report_milestone(user=member, milestone=milestone, evidence="  ")
    services.report_milestone(user=member, milestone=milestone, evidence="https://huggingface.co/alpha/alpha-13b")
    with pytest.raises(PermissionDenied):
        services.confirm_milestone(user=member, milestone=milestone)
    with pytest.raises(ValidationError):
        services.return_milestone(user=support, milestone=milestone, comment="")
    services.return_milestone(user=support, milestone=milestone, comment="The weights are not public yet.")
    milestone.refresh_from_db()
    assert milestone.status == Milestone.Status.OPEN and milestone.reported_at is None
    services.report_milestone(user=member, milestone=milestone, evidence="Public now.")
    services.confirm_milestone(user=support, milestone=milestone)
    milestone.refresh_from_db()
    assert milestone.status == Milestone.Status.MET and milestone.met_at == milestone.reported_at
    actions = list(
        AuditEvent.objects.filter(target_type="milestone", target_id=milestone.pk)
        .order_by("pk")
        .values_list("action", flat=True)
    )
    assert actions == ["milestone.reported", "milestone.returned", "milestone.reported", "milestone.confirmed"]


def test_milestones_are_set_by_managers_on_the_organizations_own_workloads(org, other_org, manager, member):
    theirs = WorkloadFactory(organization=other_org)
    data = {"title": "Pretrain 13B on 1 T tokens", "due_on": date(2027, 2, 28), "workload": theirs, "target_tokens": B}
    with pytest.raises(PermissionDenied):
        services.create_milestone(user=member, organization=org, data=data)
    with pytest.raises(ValidationError) as error:
        services.create_milestone(user=manager, organization=org, data=data)
    assert "workload" in error.value.message_dict
    with pytest.raises(ValidationError) as error:
        services.create_milestone(user=manager, organization=org, data={**data, "workload": None})
    assert "workload" in error.value.message_dict  # tokens without a workload
    milestone = services.create_milestone(
        user=manager, organization=org, data={**data, "workload": WorkloadFactory(organization=org)}
    )
    with pytest.raises(ValidationError):
        services.report_milestone(user=member, milestone=milestone, evidence="done")  # measured: met by its tokens


def test_pages_show_the_readers_own_milestones_and_the_manager_adds_one(org, member_client, manager_client, other_org):
    mine = MilestoneFactory(organization=org, title="Release the weights")
    theirs = MilestoneFactory(organization=other_org, title="Their secret milestone")
    page = member_client.get(f"/orgs/{org.slug}/outcomes/")
    assert page.status_code == 200
    assert "Release the weights" in page.content.decode() and "Their secret" not in page.content.decode()
    assert member_client.get(f"/milestones/{theirs.pk}/").status_code == 404
    csv = b"".join(member_client.get("/outcomes/milestones.csv").streaming_content).decode("utf-8-sig")
    assert "Release the weights" in csv and "Their secret" not in csv
    assert member_client.get("/outcomes/").status_code == 403  # the program's view is staff's
    assert member_client.get(f"/orgs/{org.slug}/milestones/new/").status_code == 403

    response = manager_client.post(f"/orgs/{org.slug}/milestones/new/", {"title": "", "due_on": "2027-13-01"})
    assert response.status_code == 400
    assert "This field is required." in response.content.decode()
    response = manager_client.post(
        f"/orgs/{org.slug}/milestones/new/", {"title": "Publish the evaluation", "due_on": "2027-03-31"}
    )
    created = Milestone.objects.get(title="Publish the evaluation")
    assert response.status_code == 302 and response["Location"] == f"/milestones/{created.pk}/"
    detail = member_client.get(f"/milestones/{created.pk}/").content.decode()
    assert "set a milestone" in detail and "Report it done" in detail
    response = member_client.post(f"/milestones/{created.pk}/report/", {"evidence": ""})
    assert response.status_code == 400
    assert member_client.post(f"/milestones/{created.pk}/report/", {"evidence": "arXiv:2407.03963"}).status_code == 302
    assert manager_client.get("/outcomes/").status_code == 200
    assert mine.pk


def test_the_outcomes_pages_read_in_a_bounded_number_of_queries(org, member_client, manager_client, trained):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from tests.factories import DeliverableFactory, OrganizationFactory

    def counts() -> tuple[int, int]:
        with CaptureQueriesContext(connection) as program_page:
            assert manager_client.get("/outcomes/").status_code == 200
        with CaptureQueriesContext(connection) as org_page:
            assert member_client.get(f"/orgs/{org.slug}/outcomes/").status_code == 200
        return len(program_page), len(org_page)

    def more() -> None:
        other = OrganizationFactory()
        milestone = MilestoneFactory(organization=org, workload=trained, target_tokens=2000 * B)
        MilestoneFactory(organization=other)
        DeliverableFactory(organization=org, milestone=milestone)
        DeliverableFactory(organization=other)

    more()
    before = counts()
    for _ in range(5):
        more()
    assert counts() == before


def test_the_csv_dates_a_projection_by_the_program_day_not_the_utc_one(org, trained):
    from workloads.outcomes.exports import milestones_csv

    early = NOW.replace(hour=5)  # 05:00 JST is 20:00 UTC the day before
    milestone = MilestoneFactory(organization=org, workload=trained, target_tokens=1000 * B, due_on=date(2027, 6, 1))
    (state,) = milestone_states([milestone], now=early)
    assert state.finish.on == datetime(2027, 4, 12, 5, 0, tzinfo=JST)
    lines = b"".join(milestones_csv([state], stamp="x").streaming_content).decode("utf-8-sig").splitlines()
    row = dict(zip(lines[0].split(","), lines[1].split(","), strict=True))
    assert row["projected_on"] == "2027-04-12" and row["training_tokens"] == str(1000 * B)


def test_a_met_milestone_whose_target_is_raised_is_measured_again(org, trained, manager):
    milestone = MilestoneFactory(organization=org, workload=trained, target_tokens=500 * B, due_on=date(2027, 6, 1))
    assert services.follow_measured_milestones(now=NOW) == 1
    services.update_milestone(user=manager, milestone=milestone, data={"target_tokens": 1000 * B})
    milestone.refresh_from_db()
    assert milestone.status == Milestone.Status.OPEN and milestone.met_at is None
    (state,) = milestone_states([milestone], now=NOW)
    assert state.state == "on_track" and state.tokens == 600 * B


def test_as_of_a_moment_before_it_was_met_a_milestone_is_not_met_yet(org, trained, manager):
    milestone = MilestoneFactory(organization=org, due_on=date(2027, 1, 31))
    milestone.status, milestone.met_at = Milestone.Status.MET, NOW  # confirmed on Feb 15
    milestone.save()
    (then,) = milestone_states([milestone], now=datetime(2027, 2, 1, 0, 0, tzinfo=JST))
    (now,) = milestone_states([milestone], now=NOW)
    assert (then.state, now.state) == ("overdue", "met")
