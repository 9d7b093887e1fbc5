"""Plans for the pending queue through the service, the API and the pages: made on the ledger, applied through the
approval service one request at a time (a request changed or a pool resized since is refused, the rest applied),
what-if plans never applied, program managers only."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from django.conf import settings
from django.core import mail
from django.core.exceptions import ValidationError
from django.urls import reverse

from tenants.capacity.ledger import differences
from tenants.capacity.models import CapacityPlan
from tenants.capacity.planning.reasons import FAIRNESS_LABELS
from tenants.capacity.planning.services import PlanAsk, apply_plan, make_plan
from tenants.capacity.planning.solver import FAIRNESS_RULES
from tenants.models import Allocation, AuditEvent, CapacityRequest
from tests.charts import chart_payload, values
from tests.factories import AllocationFactory, CapacityRequestFactory, MembershipFactory, OrganizationFactory

pytestmark = pytest.mark.usefixtures("before_the_program")
START = date(2027, 1, 1)


def ask(pool, **kwargs) -> CapacityRequest:
    values = {"pool": pool, "starts_on": START, "ends_on": START + timedelta(days=9), "instance_count": 10}
    return CapacityRequestFactory(**(values | kwargs))


@pytest.fixture
def queue(pool, db):
    """127 instances; 100 already allocated over the first 10 days. Three organizations ask for the same days."""
    AllocationFactory(pool=pool, instance_count=100, starts_on=START, ends_on=START + timedelta(days=9))
    first = ask(pool, instance_count=20)  # queue order would give it all 20 and leave 7
    second = ask(pool, instance_count=20)
    moved = ask(pool, instance_count=8, start_slack_days=10)  # fits fully 10 days later
    return first, second, moved


def test_the_plan_grants_no_more_than_the_pool_holds_and_moves_what_may_move(manager, pool, queue):
    first, second, moved = queue
    plan = make_plan(user=manager, ask=PlanAsk(pools=[pool]))
    rows = {row["request"]: row for row in plan.result["requests"]}
    assert rows[first.pk]["instances"] + rows[second.pk]["instances"] <= 27
    assert rows[moved.pk]["decision"] == "shifted"
    assert rows[moved.pk]["starts_on"] == "2027-01-11"
    assert plan.result["granted_hours"] >= plan.result["fcfs_hours"]
    assert plan.result["status"] in ("OPTIMAL", "FEASIBLE")
    # Max-min: the two equal asks get equal shares (27 shared, not 20 and 7).
    assert abs(rows[first.pk]["instances"] - rows[second.pk]["instances"]) <= 1
    trimmed = rows[first.pk] if rows[first.pk]["instances"] < 20 else rows[second.pk]
    assert trimmed["reason"]["code"] == "full" and trimmed["reason"]["existing"] == 100
    assert CapacityRequest.objects.filter(status=CapacityRequest.Status.SUBMITTED).count() == 3  # read only
    assert set(plan.fingerprints) == {str(first.pk), str(second.pk), str(moved.pk)}


def test_applying_approves_each_through_the_approval_service_and_refuses_what_changed(
    manager, pool, queue, django_capture_on_commit_callbacks
):
    first, second, moved = queue
    for r in queue:
        MembershipFactory(organization=r.organization)
    plan = make_plan(user=manager, ask=PlanAsk(pools=[pool]))
    # Meanwhile the second request's tenant withdraws it.
    CapacityRequest.objects.filter(pk=second.pk).update(status=CapacityRequest.Status.WITHDRAWN)
    mail.outbox.clear()
    with django_capture_on_commit_callbacks(execute=True):
        outcomes = {o.request_id: o for o in apply_plan(user=manager, plan=plan)}
    assert not outcomes[second.pk].applied
    assert "changed since the plan" in outcomes[second.pk].message
    assert outcomes[first.pk].applied and outcomes[moved.pk].applied
    moved_allocation = Allocation.objects.get(request=moved)
    assert (moved_allocation.starts_on, moved_allocation.ends_on) == (date(2027, 1, 11), date(2027, 1, 20))
    assert CapacityRequest.objects.get(pk=moved.pk).status == CapacityRequest.Status.PARTIALLY_APPROVED
    assert AuditEvent.objects.filter(action="allocation.created").count() == 2
    # Beside the approvals' own events, the plan's line: which requests it approved and which it could not.
    applied_event = AuditEvent.objects.get(action="plan.applied")
    assert (applied_event.actor, applied_event.organization, applied_event.target_id) == (manager, None, plan.pk)
    assert set(applied_event.changes["approved"][1].split(", ")) == {first.number, moved.number}
    assert applied_event.changes["refused"] == [None, second.number]
    # Each approval notifies its organization, as the review queue does, with the plan's reason as the comment.
    assert len(mail.outbox) == 2
    assert any(plan.number in message.body and "Moved 10 days later" in message.body for message in mail.outbox)
    assert differences() == {}
    plan.refresh_from_db()
    assert plan.outcomes[str(second.pk)]["applied"] is False
    # Applying again: every request is decided by now, so each is refused and nothing is granted twice.
    again = apply_plan(user=manager, plan=plan, request_ids=[first.pk])
    assert not again[0].applied
    assert Allocation.objects.filter(request=first).count() == 1


def test_a_pool_resized_since_the_plan_refuses_its_requests(manager, pool, queue):
    plan = make_plan(user=manager, ask=PlanAsk(pools=[pool]))
    pool.total_instances = 130
    pool.save()
    outcomes = apply_plan(user=manager, plan=plan)
    assert outcomes and all(not o.applied for o in outcomes)
    assert all("resized" in o.message for o in outcomes)
    assert not Allocation.objects.filter(request__in=queue).exists()


def test_a_what_if_plan_is_never_applied(manager, pool, queue):
    first, _second, _moved = queue
    plan = make_plan(user=manager, ask=PlanAsk(pools=[pool], approve_as_asked=first))
    rows = {row["request"]: row for row in plan.result["requests"]}
    assert rows[first.pk]["instances"] == 20
    assert plan.result["forced_fits"] is True
    assert any(d["request"] != first.pk for d in plan.result["displaced"])
    with pytest.raises(ValidationError, match="what-if"):
        apply_plan(user=manager, plan=plan)
    assert not Allocation.objects.filter(request__in=queue).exists()
    made = AuditEvent.objects.get(action="plan.created")
    assert (made.actor, made.organization, made.target_id) == (manager, None, plan.pk)
    assert made.changes["what_if"] == [None, True]
    assert not AuditEvent.objects.filter(action="plan.applied").exists()  # refused before anything was applied


# --- API --------------------------------------------------------------------------------------------------------


def test_api_plans_and_applies_a_subset(manager, api_client, pool, queue):
    first, second, moved = queue
    api_client.force_authenticate(manager)
    made = api_client.post("/api/v1/capacity-plans/", {"pools": [pool.pk]}, format="json")
    assert made.status_code == 201, made.json()
    body = made.json()
    assert {r["request"] for r in body["result"]["requests"]} == {first.pk, second.pk, moved.pk}
    applied = api_client.post(f"/api/v1/capacity-plans/{body['id']}/apply/", {"requests": [moved.pk]}, format="json")
    assert applied.status_code == 200, applied.json()
    assert applied.json()["outcomes"][0]["applied"] is True
    assert Allocation.objects.filter(request__in=[first, second]).count() == 0
    assert api_client.get(f"/api/v1/capacity-plans/{body['id']}/").status_code == 200


def test_making_and_applying_a_plan_through_the_api_is_audited(manager, api_client, pool, queue):
    _first, _second, moved = queue
    api_client.force_authenticate(manager)
    plan_id = api_client.post("/api/v1/capacity-plans/", {"pools": [pool.pk], "fairness": "total"}, format="json")
    plan_id = plan_id.json()["id"]
    api_client.post(f"/api/v1/capacity-plans/{plan_id}/apply/", {"requests": [moved.pk]}, format="json")
    events = list(AuditEvent.objects.filter(target_type="capacityplan").order_by("pk"))
    # A plan spans organizations: its events belong to none (program staff's, like the plan).
    assert [(e.action, e.actor, e.organization, e.target_id) for e in events] == [
        ("plan.created", manager, None, plan_id),
        ("plan.applied", manager, None, plan_id),
    ]
    assert events[0].changes == {
        "pools": [None, str(pool)],
        "requests": [None, 3],
        "fairness": [None, "total"],
        "what_if": [None, False],
    }
    assert events[1].changes == {"approved": [None, moved.number]}


def test_api_what_if_growth_answers_without_touching_the_ledger(manager, api_client, pool, queue):
    api_client.force_authenticate(manager)
    body = {
        "pools": [pool.pk],
        "what_if": {"pool_growth": [{"pool": pool.pk, "instances": 50, "starts_on": "2027-01-01"}]},
    }
    made = api_client.post("/api/v1/capacity-plans/", body, format="json")
    assert made.status_code == 201, made.json()
    rows = {r["request"]: r for r in made.json()["result"]["requests"]}
    assert len(rows) == len(queue)
    assert all(r["decision"] == "as_asked" for r in rows.values())
    applied = api_client.post(f"/api/v1/capacity-plans/{made.json()['id']}/apply/", {}, format="json")
    assert applied.status_code == 400
    assert not Allocation.objects.filter(request__in=queue).exists()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"pools": [999999]}, "pools"),
        ({"requests": [999999]}, "requests"),
        ({"fairness": "lottery"}, "fairness"),
        ({"time_limit": 999}, "time_limit"),
        ({"what_if": {"pool_growth": [{"pool": 999999, "instances": 1, "starts_on": "2027-01-01"}]}}, "what_if"),
    ],
)
def test_api_bad_input_is_a_400_naming_the_field(manager, api_client, pool, queue, body, field):
    api_client.force_authenticate(manager)
    response = api_client.post("/api/v1/capacity-plans/", body, format="json")
    assert response.status_code == 400
    assert field in response.json()


def test_api_one_weight_per_organization(manager, api_client, pool, queue):
    api_client.force_authenticate(manager)
    slug = queue[0].organization.slug
    body = {"pools": [pool.pk], "weights": [{"organization": slug, "weight": 2}, {"organization": slug, "weight": 5}]}
    response = api_client.post("/api/v1/capacity-plans/", body, format="json")
    assert response.status_code == 400
    assert response.json() == {"weights": [f"One weight per organization: {slug} given more than once."]}
    assert not CapacityPlan.objects.exists()


def test_api_what_if_growth_is_bounded_before_the_planner_runs(manager, api_client, pool, queue, monkeypatch):
    from tenants.capacity.planning import api as planning_api
    from tenants.capacity.planning.serializers import MAX_POOL_GROWTH

    monkeypatch.setattr(planning_api, "make_plan", lambda **kwargs: pytest.fail("the planner was handed it"))
    api_client.force_authenticate(manager)
    growth = [
        {"pool": pool.pk, "instances": 1, "starts_on": str(START + timedelta(days=day))}
        for day in range(MAX_POOL_GROWTH + 1)
    ]
    response = api_client.post("/api/v1/capacity-plans/", {"what_if": {"pool_growth": growth}}, format="json")
    assert response.status_code == 400 and "pool_growth" in response.json()["what_if"]
    same_day = [growth[0], growth[0]]
    response = api_client.post("/api/v1/capacity-plans/", {"what_if": {"pool_growth": same_day}}, format="json")
    assert response.status_code == 400 and "pool_growth" in response.json()["what_if"]
    schema = api_client.get("/api/schema/?format=json").json()["components"]["schemas"]
    assert schema["WhatIfRequest"]["properties"]["pool_growth"]["maxItems"] == MAX_POOL_GROWTH
    assert schema["WhatIfRequest"]["additionalProperties"] is False


@pytest.mark.parametrize("field", ["what_if", "weights"])
@pytest.mark.parametrize("content", ["form", "multipart"])
def test_api_a_structure_sent_in_a_form_is_a_400_naming_it_not_dropped(
    manager, api_client, pool, queue, field, content
):
    api_client.force_authenticate(manager)
    value = '{"pool_growth": []}' if field == "what_if" else '[{"organization": "x", "weight": 2}]'
    if content == "form":
        response = api_client.post(
            "/api/v1/capacity-plans/", f"{field}={value}", content_type="application/x-www-form-urlencoded"
        )
    else:
        response = api_client.post("/api/v1/capacity-plans/", {field: value}, format="multipart")
    assert response.status_code == 400
    assert "send the request as JSON" in response.json()[field][0]
    assert not CapacityPlan.objects.exists()


def test_api_a_request_not_pending_is_a_400_naming_it(manager, api_client, pool, queue):
    first, *_ = queue
    CapacityRequest.objects.filter(pk=first.pk).update(status=CapacityRequest.Status.DRAFT)
    api_client.force_authenticate(manager)
    response = api_client.post("/api/v1/capacity-plans/", {"requests": [first.pk]}, format="json")
    assert response.status_code == 400
    assert first.number in str(response.json()["requests"])


def test_api_applying_a_request_the_plan_does_not_grant_is_a_400(manager, api_client, pool, queue):
    api_client.force_authenticate(manager)
    plan_id = api_client.post("/api/v1/capacity-plans/", {}, format="json").json()["id"]
    response = api_client.post(f"/api/v1/capacity-plans/{plan_id}/apply/", {"requests": [999999]}, format="json")
    assert response.status_code == 400 and "requests" in response.json()


def test_a_slack_past_the_program_end_is_refused_naming_it(member_api, pool, org):
    response = member_api.post(
        "/api/v1/capacity-requests/",
        {
            "organization": org.slug, "instance_type": "p5.48xlarge", "region": "us-east-1", "instance_count": 4,
            "starts_on": "2027-06-01", "ends_on": "2027-06-20", "start_slack_days": 30, "justification": "x",
        },
        format="json",
    )  # fmt: skip
    assert response.status_code == 400
    assert "start_slack_days" in response.json()


def test_tenants_and_support_engineers_cannot_plan(member_api, support, api_client, pool, queue, manager):
    assert member_api.post("/api/v1/capacity-plans/", {}, format="json").status_code == 403
    plan = make_plan(user=manager, ask=PlanAsk(pools=[pool]))
    assert member_api.get(f"/api/v1/capacity-plans/{plan.pk}/").status_code == 403
    assert member_api.post(f"/api/v1/capacity-plans/{plan.pk}/apply/", {}, format="json").status_code == 403
    api_client.force_authenticate(support)
    assert api_client.post("/api/v1/capacity-plans/", {}, format="json").status_code == 403
    assert not Allocation.objects.filter(request__in=queue).exists()


# --- Pages ------------------------------------------------------------------------------------------------------


def test_the_plan_page_shows_the_plan_beside_the_queue_and_applies_a_selection(manager_client, pool, queue):
    first, second, moved = queue
    response = manager_client.post(reverse("capacity-plans"), {"pool": str(pool.pk), "fairness": "maxmin"})
    assert response.status_code == 302
    plan = CapacityPlan.objects.get()
    page = manager_client.get(response["Location"])
    html = page.content.decode()
    assert page.status_code == 200
    for r in queue:
        assert r.number in html
    option = chart_payload(html, f"chart-plan-pool-{pool.pk}")["option"]
    before, after = (values(option["series"][i]["data"]) for i in (0, 1))
    granted = [b - a for b, a in zip(before, after, strict=True)]
    assert min(granted) >= 0 and max(granted) > 0  # the plan takes instances out of the free ones, never adds
    applied = manager_client.post(reverse("capacity-plan-apply-page", args=[plan.pk]), {"requests": [str(moved.pk)]})
    assert applied.status_code == 302
    assert Allocation.objects.filter(request=moved).exists()
    assert not Allocation.objects.filter(request__in=[first, second]).exists()


def test_making_and_applying_a_plan_on_the_pages_is_audited_and_read_in_words(manager_client, manager, pool, queue):
    _first, _second, moved = queue
    manager_client.post(reverse("capacity-plans"), {"pool": str(pool.pk), "fairness": "maxmin"})
    plan = CapacityPlan.objects.get()
    manager_client.post(reverse("capacity-plan-apply-page", args=[plan.pk]), {"requests": [str(moved.pk)]})
    made, applied = AuditEvent.objects.filter(target_type="capacityplan").order_by("pk")
    assert (made.action, made.actor, made.organization) == ("plan.created", manager, None)
    assert made.changes == {
        "pools": [None, str(pool)],
        "requests": [None, 3],
        "fairness": [None, "maxmin"],
        "what_if": [None, False],
    }
    assert (applied.action, applied.actor, applied.organization) == ("plan.applied", manager, None)
    assert applied.changes == {"approved": [None, moved.number]}
    # The approval the plan made is audited under its organization by the approval service, as from the queue.
    assert AuditEvent.objects.get(action="allocation.created").organization == moved.organization
    page = manager_client.get(reverse("audit-log")).text
    assert "made a capacity plan" in page and "applied the capacity plan" in page
    link = f'<a href="{reverse("capacity-plan-page", args=[plan.pk])}">Capacity plan {plan.number}</a>'
    assert link in page
    # Its details in words, not their stored keys and codes.
    assert "Fairness rule: — → Max-min share per organization, then the most instance-hours" in page
    assert "What-if: — → no" in page and "Requests planned: — → 3" in page
    assert f"Approved: — → {moved.number}" in page
    manager_client.cookies[settings.LANGUAGE_COOKIE_NAME] = "ja"
    page = manager_client.get(reverse("audit-log")).text
    assert "がキャパシティ計画を作成しました" in page and "がキャパシティ計画を適用しました" in page
    assert "Fairness rule" not in page and "What-if" not in page and "maxmin" not in page


def test_the_audit_trail_links_a_plan_only_for_those_who_may_open_it(support_client, manager, pool, queue):
    """A support engineer reads the plan's lines, but its page is a program manager's: the name, unlinked."""
    plan = make_plan(user=manager, ask=PlanAsk(pools=[pool]))
    page = support_client.get(reverse("audit-log")).text
    assert f"Capacity plan {plan.number}" in page
    assert reverse("capacity-plan-page", args=[plan.pk]) not in page
    assert support_client.get(reverse("capacity-plan-page", args=[plan.pk])).status_code == 403


def test_every_fairness_rule_has_words():
    assert set(FAIRNESS_LABELS) == set(FAIRNESS_RULES)


def test_the_plan_pages_are_for_program_managers(member_client, support_client, manager, pool, queue):
    plan = make_plan(user=manager, ask=PlanAsk(pools=[pool]))
    for client in (member_client, support_client):
        assert client.get(reverse("capacity-plans")).status_code == 403
        assert client.get(reverse("capacity-plan-page", args=[plan.pk])).status_code == 403
        assert client.post(reverse("capacity-plan-apply-page", args=[plan.pk])).status_code == 403
    assert not Allocation.objects.filter(request__in=queue).exists()


def test_the_plan_page_reads_a_bounded_number_of_queries(manager_client, manager, pool, django_assert_max_num_queries):
    for _ in range(30):
        ask(pool, organization=OrganizationFactory(), instance_count=3)
    plan = make_plan(user=manager, ask=PlanAsk(pools=[pool]))
    with django_assert_max_num_queries(12):
        assert manager_client.get(reverse("capacity-plan-page", args=[plan.pk])).status_code == 200
