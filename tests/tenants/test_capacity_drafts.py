"""A draft can be rewritten (page and API) under the same rules as a new request; a submitted one cannot."""

from datetime import date
from decimal import Decimal

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.urls import reverse

from tenants.capacity.requests import Plan, edit_draft
from tenants.models import AuditEvent, CapacityRequest
from tests.factories import CapacityPoolFactory, CapacityRequestFactory, instance_type

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("before_the_program")]
Status = CapacityRequest.Status


@pytest.fixture
def draft(pool, org, member):
    return CapacityRequestFactory(
        pool=pool,
        organization=org,
        created_by=member,
        status=Status.DRAFT,
        instance_count=8,
        starts_on=date(2027, 1, 1),
        ends_on=date(2027, 1, 31),
        parameter_count=7_000_000_000,
        expected_mfu=Decimal("0.400"),
    )


def plan(**change) -> Plan:
    return Plan(
        **{
            "instance_type": instance_type("p5.48xlarge"),
            "region": "us-east-1",
            "instance_count": 8,
            "starts_on": date(2027, 1, 1),
            "ends_on": date(2027, 1, 31),
            "justification": "Pre-training a 7B model.",
            "parameter_count": 7_000_000_000,
            "expected_mfu": Decimal("0.40"),
        }
        | change
    )


def edits(request) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(target_id=request.pk, action="request.edited"))


# --- Service -----------------------------------------------------------------------------------


def test_editing_a_draft_records_each_changed_field_with_the_actor(draft, member):
    edit_draft(user=member, capacity_request=draft, plan=plan(instance_count=16, ends_on=date(2027, 2, 28)))
    draft.refresh_from_db()
    assert (draft.instance_count, draft.ends_on, draft.status) == (16, date(2027, 2, 28), Status.DRAFT)
    [event] = edits(draft)
    assert event.actor == member
    assert event.changes == {"instance_count": [8, 16], "ends_on": ["2027-01-31", "2027-02-28"]}


def test_an_edit_that_changes_nothing_records_nothing(draft, member):
    edit_draft(user=member, capacity_request=draft, plan=plan())
    assert edits(draft) == []


def test_an_edit_may_submit_the_draft_in_the_same_step(draft, member):
    edit_draft(user=member, capacity_request=draft, submit=True, plan=plan(instance_count=4))
    draft.refresh_from_db()
    assert (draft.instance_count, draft.status) == (4, Status.SUBMITTED)


def test_a_submitted_request_is_frozen(pool, org, member):
    submitted = CapacityRequestFactory(pool=pool, organization=org, created_by=member)
    with pytest.raises(ValidationError, match="Only a draft can be edited; this request is submitted"):
        edit_draft(user=member, capacity_request=submitted, plan=plan(instance_count=1))
    submitted.refresh_from_db()
    assert submitted.instance_count == 8


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"instance_count": 0}, "instance_count"),
        ({"instance_count": 500}, "instance_count"),
        ({"region": "ap-northeast-1", "instance_type": "trn1.32xlarge"}, "region"),  # not offered in Tokyo
        ({"ends_on": date(2027, 9, 1)}, "ends_on"),
        ({"justification": "  "}, "justification"),
    ],
)
def test_a_bad_edit_changes_nothing(draft, member, change, field):
    if "instance_type" in change:
        change = change | {"instance_type": instance_type(change["instance_type"])}
    with pytest.raises(ValidationError) as refused:
        edit_draft(user=member, capacity_request=draft, plan=plan(**change))
    assert field in refused.value.message_dict
    draft.refresh_from_db()
    assert (draft.instance_count, draft.pool_id, draft.ends_on) == (8, draft.pool.pk, date(2027, 1, 31))
    assert edits(draft) == []


def test_staff_do_not_edit_a_tenants_draft(draft, manager):
    with pytest.raises(PermissionDenied):
        edit_draft(user=manager, capacity_request=draft, plan=plan(instance_count=1))


# --- Pages -------------------------------------------------------------------------------------


def test_the_detail_page_offers_edit_only_for_a_draft(member_client, draft, pool, org, member):
    edit = reverse("capacity-request-edit", args=[org.slug, draft.pk])
    assert edit in member_client.get(reverse("capacity-request", args=[org.slug, draft.pk])).text
    submitted = CapacityRequestFactory(pool=pool, organization=org, created_by=member)
    page = member_client.get(reverse("capacity-request", args=[org.slug, submitted.pk])).text
    assert reverse("capacity-request-edit", args=[org.slug, submitted.pk]) not in page


def test_the_edit_form_is_prefilled_with_the_draft_and_its_estimate(member_client, draft, org):
    page = member_client.get(reverse("capacity-request-edit", args=[org.slug, draft.pk])).text
    assert f"Edit draft R-{draft.pk}" in page
    assert 'name="parameters_b" value="7"' in page
    assert 'name="instance_count" value="8"' in page
    assert "Accelerator-hours" in page  # the estimate panel is filled before anyone types


def test_saving_the_edit_form(member_client, draft, org, pool):
    url = reverse("capacity-request-edit", args=[org.slug, draft.pk])
    form = {
        "pool": "p5.48xlarge/us-east-1", "instance_count": "12", "starts_on": "2027-01-01",
        "ends_on": "2027-01-31", "justification": "Pre-training a 7B model.", "parameters_b": "8",
        "expected_mfu": "0.40", "draft": "1",
    }  # fmt: skip
    response = member_client.post(url, form)
    assert response.status_code == 302
    draft.refresh_from_db()
    assert (draft.instance_count, draft.status) == (12, Status.DRAFT)
    history = member_client.get(response.url).text  # in the model's words, counts grouped
    assert "Instances: 8 → 12" in history and "Parameters: 7,000,000,000 → 8,000,000,000" in history

    response = member_client.post(url, form | {"instance_count": "0"})
    assert response.status_code == 400
    assert "Ensure this value is greater than or equal to 1." in response.text
    CapacityPoolFactory(program=pool.program, instance_type=instance_type("trn1.32xlarge"), total_instances=24)
    response = member_client.post(url, form | {"pool": "trn1.32xlarge/ap-northeast-1"})
    assert "The program has no pool of trn1.32xlarge/ap-northeast-1" in response.text
    draft.refresh_from_db()
    assert draft.instance_count == 12

    response = member_client.post(url, form | {"submit": "1"}, follow=True)
    assert "submitted for review" in response.text
    draft.refresh_from_db()
    assert draft.status == Status.SUBMITTED


def test_editing_a_submitted_request_sends_back_to_it_with_a_message(member_client, pool, org, member):
    submitted = CapacityRequestFactory(pool=pool, organization=org, created_by=member)
    response = member_client.get(reverse("capacity-request-edit", args=[org.slug, submitted.pk]), follow=True)
    assert response.redirect_chain[-1][0] == reverse("capacity-request", args=[org.slug, submitted.pk])
    assert "Only a draft can be edited" in response.text


# --- API ---------------------------------------------------------------------------------------


def test_api_patch_rewrites_a_draft_and_may_submit_it(member_api, draft):
    url = f"/api/v1/capacity-requests/{draft.pk}/"
    response = member_api.patch(url, {"instance_count": 10}, format="json")
    assert response.status_code == 200, response.json()
    assert (response.json()["instance_count"], response.json()["status"]) == (10, "draft")
    draft.refresh_from_db()
    assert draft.parameter_count == 7_000_000_000  # PATCH keeps what it was not given
    response = member_api.patch(url, {"ends_on": "2027-02-15", "submit": True}, format="json")
    assert (response.json()["ends_on"], response.json()["status"]) == ("2027-02-15", "submitted")
    assert member_api.patch(url, {"instance_count": 1}, format="json").json() == {
        "non_field_errors": ["Only a draft can be edited; this request is submitted."]
    }


def test_api_edit_bad_input_is_400_with_field_messages(member_api, draft, other_org):
    url = f"/api/v1/capacity-requests/{draft.pk}/"
    assert member_api.patch(url, {"instance_count": 0}, format="json").status_code == 400
    response = member_api.patch(url, {"ends_on": "2026-12-01"}, format="json")
    assert response.status_code == 400 and "ends_on" in response.json()
    response = member_api.patch(url, {"organization": other_org.slug}, format="json")
    assert response.status_code == 400 and "organization" in response.json()
    response = member_api.patch(url, {"status": "submitted", "instance_count": 9}, format="json")
    assert response.status_code == 400 and "submit and withdraw actions" in response.json()["status"][0]
    assert member_api.patch(url, {"status": "draft", "instance_count": 8}, format="json").status_code == 200
    draft.refresh_from_db()
    assert (draft.instance_count, draft.ends_on) == (8, date(2027, 1, 31))


def test_api_edit_of_another_orgs_draft_is_404_and_staff_get_403(api_client, outsider, manager, draft):
    url = f"/api/v1/capacity-requests/{draft.pk}/"
    api_client.force_authenticate(outsider)
    assert api_client.patch(url, {"instance_count": 1}, format="json").status_code == 404
    api_client.force_authenticate(manager)
    assert api_client.patch(url, {"instance_count": 1}, format="json").status_code == 403
    draft.refresh_from_db()
    assert draft.instance_count == 8


def test_the_edit_form_shows_round_sizes_as_plain_numbers(member_client, draft, org):
    draft.parameter_count, draft.training_tokens = 70_000_000_000, 15_000_000_000_000
    draft.save()
    page = member_client.get(reverse("capacity-request-edit", args=[org.slug, draft.pk])).text
    assert 'name="parameters_b" value="70"' in page and 'name="tokens_b" value="15000"' in page
