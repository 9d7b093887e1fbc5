from datetime import date

import pytest
import time_machine
from django.core import mail
from django.core.exceptions import PermissionDenied, ValidationError
from django.utils import translation

from tenants.capacity.allocations import refresh_allocation_statuses, revoke_allocation
from tenants.capacity.decisions import approve_request, reject_request
from tenants.capacity.pools import check_pool_change
from tenants.capacity.requests import Plan, create_request, submit_request, withdraw_request
from tenants.models import Allocation, AuditEvent, CapacityRequest
from tests.factories import (
    AllocationFactory,
    CapacityPoolFactory,
    CapacityRequestFactory,
    OrganizationFactory,
    ProgramFactory,
    instance_type,
)

pytestmark = pytest.mark.usefixtures("before_the_program")
Status = CapacityRequest.Status


def d(month: int, day: int) -> date:
    return date(2027, month, day)


def submitted(pool, count, start, end, org=None):
    return CapacityRequestFactory(
        pool=pool, organization=org or OrganizationFactory(), instance_count=count, starts_on=start, ends_on=end
    )


# --- The invariant -----------------------------------------------------------------------------


def test_overlapping_windows_respect_the_pool(pool, manager):
    """Pool 127: A 100 Jan–Mar and B 27 Feb–Apr fit; C 1 in March does not; C in May does."""
    a = approve_request(user=manager, capacity_request=submitted(pool, 100, d(1, 1), d(3, 31)))
    b = approve_request(user=manager, capacity_request=submitted(pool, 27, d(2, 1), d(4, 30)))
    assert (a.instance_count, b.instance_count) == (100, 27)

    march = submitted(pool, 1, d(3, 1), d(3, 31))
    with pytest.raises(ValidationError) as refused:
        approve_request(user=manager, capacity_request=march)
    message = refused.value.message_dict["instance_count"][0]
    assert "on 2027-03-01" in message
    assert "127 of its 127 allocatable instances are already allocated" in message
    assert "(free: 0, short by 1)" in message
    march.refresh_from_db()
    assert march.status == Status.SUBMITTED  # nothing changed
    assert Allocation.objects.count() == 2

    may = approve_request(user=manager, capacity_request=submitted(pool, 1, d(5, 1), d(5, 31)))
    assert may.status == Allocation.Status.SCHEDULED


def test_spare_instances_are_held_back(manager):
    pool = CapacityPoolFactory(program=ProgramFactory(), total_instances=64, spare_instances=2)
    approve_request(user=manager, capacity_request=submitted(pool, 62, d(1, 1), d(1, 31)))
    with pytest.raises(ValidationError, match=r"\(free: 0, short by 2\)"):
        approve_request(user=manager, capacity_request=submitted(pool, 2, d(1, 15), d(2, 15)))


def test_revoked_allocations_free_their_capacity(pool, manager):
    allocation = approve_request(user=manager, capacity_request=submitted(pool, 127, d(1, 1), d(1, 31)))
    revoke_allocation(user=manager, allocation=allocation, reason="Project paused.")
    assert approve_request(user=manager, capacity_request=submitted(pool, 127, d(1, 1), d(1, 31)))


def test_partial_approval_trims_count_and_window(pool, manager, member, org):
    request = submitted(pool, 32, d(1, 1), d(3, 31), org=org)
    allocation = approve_request(
        user=manager, capacity_request=request, instance_count=16, ends_on=d(2, 28), comment="Half for now."
    )
    request.refresh_from_db()
    assert request.status == Status.PARTIALLY_APPROVED
    assert (allocation.instance_count, allocation.starts_on, allocation.ends_on) == (16, d(1, 1), d(2, 28))
    assert (request.decided_by, request.decision_comment) == (manager, "Half for now.")


@pytest.mark.parametrize(
    ("kwargs", "field", "text"),
    [
        ({"instance_count": 33}, "instance_count", "more than the 32 instances requested"),
        ({"instance_count": 0}, "instance_count", "at least one"),
        ({"starts_on": date(2026, 12, 20)}, "starts_on", "not widen it"),
        ({"ends_on": d(4, 30)}, "ends_on", "not widen it"),
        ({"starts_on": d(2, 1), "ends_on": d(1, 15)}, "ends_on", "must not be before"),
    ],
)
def test_bad_approvals_are_refused_and_change_nothing(pool, manager, kwargs, field, text):
    request = submitted(pool, 32, d(1, 1), d(3, 31))
    with pytest.raises(ValidationError) as refused:
        approve_request(user=manager, capacity_request=request, **kwargs)
    assert text in refused.value.message_dict[field][0]
    request.refresh_from_db()
    assert request.status == Status.SUBMITTED
    assert not Allocation.objects.exists()


@pytest.mark.parametrize("status", [Status.DRAFT, Status.APPROVED, Status.REJECTED, Status.WITHDRAWN])
def test_only_submitted_requests_can_be_decided(pool, manager, status):
    request = CapacityRequestFactory(pool=pool, status=status)
    with pytest.raises(ValidationError, match="Only a submitted request can be decided"):
        approve_request(user=manager, capacity_request=request)
    with pytest.raises(ValidationError, match="Only a submitted request can be decided"):
        reject_request(user=manager, capacity_request=request, comment="no")


def test_tenants_and_support_cannot_decide(pool, member, org, support):
    request = submitted(pool, 1, d(1, 1), d(1, 31), org=org)
    for user in (member, support):
        with pytest.raises(PermissionDenied):
            approve_request(user=user, capacity_request=request)
        with pytest.raises(PermissionDenied):
            reject_request(user=user, capacity_request=request, comment="x")


def test_reject_needs_a_reason_and_notifies(pool, manager, member, org):
    request = submitted(pool, 1, d(1, 1), d(1, 31), org=org)
    with pytest.raises(ValidationError, match="why"):
        reject_request(user=manager, capacity_request=request, comment="  ")
    reject_request(user=manager, capacity_request=request, comment="Pool is full until May.")
    request.refresh_from_db()
    assert request.status == Status.REJECTED


def test_decision_emails_the_tenant_after_commit(
    pool, manager, member, org, django_capture_on_commit_callbacks, settings
):
    settings.PORTAL_URL = "https://portal.example"
    request = submitted(pool, 8, d(1, 1), d(1, 31), org=org)
    with django_capture_on_commit_callbacks(execute=True):
        approve_request(user=manager, capacity_request=request, instance_count=4, comment="Trimmed.")
    assert len(mail.outbox) == 1
    email = mail.outbox[0]
    assert member.email in email.to
    assert f"Capacity request R-{request.pk}: Partially approved" == email.subject
    request.refresh_from_db()
    assert f"Allocated (A-{request.allocation.pk}): 4 instances from 2027-01-01 to 2027-01-31." in email.body
    # A mail has no page to be relative to: the link is absolute, on PORTAL_URL.
    assert f"portal: https://portal.example/orgs/{org.slug}/capacity/requests/{request.pk}/" in email.body
    assert "Comment: Trimmed." in email.body


def test_the_decision_email_is_in_the_organizations_language_whatever_the_managers(
    pool, manager, member, org, django_capture_on_commit_callbacks
):
    org.language = "ja"
    org.save(update_fields=["language"])
    request = submitted(pool, 8, d(1, 1), d(1, 31), org=org)
    with translation.override("en"), django_capture_on_commit_callbacks(execute=True):
        approve_request(user=manager, capacity_request=request, instance_count=4, comment="Trimmed.")
    [email] = mail.outbox
    assert email.subject.startswith(f"キャパシティ申請 R-{request.pk}：")
    assert "Allocated" not in email.body and "Trimmed." in email.body


# --- Tenant actions ----------------------------------------------------------------------------


def create(user, org, submit=False, base_allocation=None, **overrides):
    plan = dict(
        instance_type=instance_type("p5.48xlarge"), region="us-east-1", instance_count=8, starts_on=d(1, 1),
        ends_on=d(1, 31), justification="7B pre-training",
    ) | overrides  # fmt: skip
    return create_request(
        user=user, organization=org, plan=Plan(**plan), base_allocation=base_allocation, submit=submit
    )


def test_tenant_creates_and_submits(pool, member, org):
    request = create(member, org, submit=True, parameter_count=7 * 10**9)
    assert request.status == Status.SUBMITTED and request.submitted_at is not None
    assert request.pool == pool
    actions = list(AuditEvent.objects.for_org(org).order_by("pk").values_list("action", flat=True))
    assert actions == ["request.created", "request.submitted"]


def test_draft_then_submit_then_withdraw(pool, member, org):
    request = create(member, org)
    assert request.status == Status.DRAFT
    submit_request(user=member, capacity_request=request)
    withdraw_request(user=member, capacity_request=request)
    request.refresh_from_db()
    assert request.status == Status.WITHDRAWN
    with pytest.raises(ValidationError, match="Only a draft or a submitted request can be withdrawn"):
        withdraw_request(user=member, capacity_request=request)


@pytest.mark.parametrize(
    ("overrides", "field", "text"),
    [
        ({"instance_count": 0}, "instance_count", "at least one instance"),
        ({"instance_count": 128}, "instance_count", "127 allocatable instances"),
        ({"ends_on": date(2026, 12, 31)}, "ends_on", "must not be before"),
        ({"starts_on": date(2026, 11, 30), "ends_on": d(1, 5)}, "starts_on", "in the past"),
        ({"starts_on": date(2026, 12, 20)}, "starts_on", "from 2027-01-01 to 2027-07-01"),
        ({"ends_on": d(8, 1)}, "ends_on", "from 2027-01-01 to 2027-07-01"),
        ({"instance_type": "trn1.32xlarge", "region": "ap-northeast-1"}, "region", "not offered in ap-northeast-1"),
        ({"region": "ap-northeast-1"}, "instance_type", "no pool of p5.48xlarge in ap-northeast-1"),
        ({"instance_type": "p4de.24xlarge"}, "region", "not offered"),
        ({"justification": "  "}, "justification", "what the capacity is for"),
        ({"parameter_count": -5}, "parameter_count", "between 1 and"),
        ({"expected_mfu": 2}, "expected_mfu", "between 0 and 1"),
    ],
)
def test_bad_requests_get_a_clear_message_and_nothing_is_written(pool, member, org, overrides, field, text):
    if isinstance(overrides.get("instance_type"), str):
        overrides["instance_type"] = instance_type(overrides["instance_type"])
    with pytest.raises(ValidationError) as refused:
        create(member, org, **overrides)
    assert text in " ".join(refused.value.message_dict[field])
    assert not CapacityRequest.objects.exists()
    assert not AuditEvent.objects.exists()


def test_outsider_cannot_request_for_another_org(pool, outsider, org):
    from django.http import Http404

    with pytest.raises(Http404):
        create(outsider, org)


def test_extension_must_name_own_allocation(pool, member, org, other_org):
    theirs = AllocationFactory(pool=pool, organization=other_org)
    with pytest.raises(ValidationError, match="this organization's current allocations"):
        create(member, org, base_allocation=theirs, kind=CapacityRequest.Kind.EXTENSION)
    mine = AllocationFactory(pool=pool, organization=org)
    request = create(member, org, base_allocation=mine, kind=CapacityRequest.Kind.EXTENSION, starts_on=d(2, 1),
                     ends_on=d(2, 28))  # fmt: skip
    assert request.pool == mine.pool


# --- Allocation lifecycle ----------------------------------------------------------------------


def test_statuses_move_with_the_calendar_and_rerun_is_a_no_op(pool, org):
    allocation = AllocationFactory(pool=pool, organization=org, starts_on=d(1, 1), ends_on=d(1, 31))
    assert refresh_allocation_statuses(on=d(1, 1)) == 1
    allocation.refresh_from_db()
    assert allocation.status == Allocation.Status.ACTIVE
    assert refresh_allocation_statuses(on=d(1, 1)) == 0
    assert refresh_allocation_statuses(on=d(2, 1)) == 1
    allocation.refresh_from_db()
    assert allocation.status == Allocation.Status.EXPIRED
    events = AuditEvent.objects.filter(target_type="allocation", target_id=allocation.pk).order_by("pk")
    assert [e.changes["status"] for e in events] == [["scheduled", "active"], ["active", "expired"]]


def test_revoke_needs_a_reason_and_is_audited(pool, manager, org):
    allocation = AllocationFactory(pool=pool, organization=org)
    with pytest.raises(ValidationError):
        revoke_allocation(user=manager, allocation=allocation, reason="")
    revoke_allocation(user=manager, allocation=allocation, reason="Org left the program.")
    event = AuditEvent.objects.get(action="allocation.revoked")
    assert (event.actor, event.changes, event.comment) == (
        manager,
        {"status": ["scheduled", "revoked"]},
        "Org left the program.",
    )
    with pytest.raises(ValidationError, match="already revoked"):
        revoke_allocation(user=manager, allocation=allocation, reason="again")


def test_tenant_cannot_revoke(pool, member, org):
    with pytest.raises(PermissionDenied):
        revoke_allocation(user=member, allocation=AllocationFactory(pool=pool, organization=org), reason="x")


def test_the_periodic_task_moves_statuses_and_is_safe_to_run_twice(pool, org):
    from tenants.capacity.tasks import refresh_allocation_statuses

    allocation = AllocationFactory(pool=pool, organization=org, starts_on=date(2026, 11, 1), ends_on=d(1, 31))
    assert refresh_allocation_statuses.apply().get() == 1
    assert refresh_allocation_statuses.apply().get() == 0
    allocation.refresh_from_db()
    assert allocation.status == Allocation.Status.ACTIVE


# --- Rules found in review ---------------------------------------------------------------------


def test_program_staff_do_not_file_or_withdraw_tenant_requests(pool, org, member, support, manager):
    for staff in (support, manager):
        with pytest.raises(PermissionDenied, match="Only members"):
            create(staff, org)
    request = create(member, org, submit=True)
    with pytest.raises(PermissionDenied):
        withdraw_request(user=support, capacity_request=request)
    request.refresh_from_db()
    assert request.status == Status.SUBMITTED


def test_extension_starts_the_day_after_the_allocation(pool, member, org):
    base = AllocationFactory(pool=pool, organization=org, starts_on=d(1, 1), ends_on=d(1, 31))
    with pytest.raises(ValidationError, match="starts the day after the allocation ends: 2027-02-01"):
        create(
            member, org, base_allocation=base, kind=CapacityRequest.Kind.EXTENSION, starts_on=d(1, 1), ends_on=d(2, 28)
        )
    assert create(member, org, base_allocation=base, kind=CapacityRequest.Kind.EXTENSION, starts_on=d(2, 1),
                  ends_on=d(2, 28))  # fmt: skip


def test_enlargement_stays_inside_the_allocation(pool, member, org):
    base = AllocationFactory(pool=pool, organization=org, starts_on=d(1, 1), ends_on=d(1, 31))
    with pytest.raises(ValidationError, match="inside the allocation's window"):
        create(
            member,
            org,
            base_allocation=base,
            kind=CapacityRequest.Kind.ENLARGEMENT,
            starts_on=d(1, 15),
            ends_on=d(2, 5),
        )
    assert create(member, org, base_allocation=base, kind=CapacityRequest.Kind.ENLARGEMENT, starts_on=d(1, 15),
                  ends_on=d(1, 31))  # fmt: skip


@pytest.mark.parametrize("status", [Allocation.Status.EXPIRED, Allocation.Status.REVOKED])
def test_only_current_allocations_change(pool, member, org, status):
    base = AllocationFactory(pool=pool, organization=org, starts_on=d(1, 1), ends_on=d(1, 31), status=status)
    with pytest.raises(ValidationError, match="Only a scheduled or active allocation"):
        create(
            member, org, base_allocation=base, kind=CapacityRequest.Kind.EXTENSION, starts_on=d(2, 1), ends_on=d(2, 9)
        )


def test_late_approval_starts_today_and_a_passed_window_is_refused(pool, manager):
    request = submitted(pool, 4, d(1, 1), d(1, 31))
    with time_machine.travel(date(2027, 1, 10), tick=False):
        allocation = approve_request(user=manager, capacity_request=request)
    assert (allocation.starts_on, allocation.status) == (d(1, 10), Allocation.Status.ACTIVE)
    old = submitted(pool, 4, d(1, 1), d(1, 31))
    with time_machine.travel(date(2027, 2, 10), tick=False), pytest.raises(ValidationError, match="has passed"):
        approve_request(user=manager, capacity_request=old)


def test_a_pool_cannot_shrink_below_its_allocations(pool):
    AllocationFactory(pool=pool, instance_count=100, starts_on=d(2, 1), ends_on=d(2, 28))
    args = dict(total_instances=127, spare_instances=0, starts_on=pool.starts_on, ends_on=pool.ends_on)
    check_pool_change(pool=pool, **args)  # unchanged: fine
    with pytest.raises(ValidationError, match="On 2027-02-01, 100 instances are allocated"):
        check_pool_change(pool=pool, **(args | {"total_instances": 99}))
    with pytest.raises(ValidationError, match="outside the new window"):
        check_pool_change(pool=pool, **(args | {"ends_on": d(1, 31)}))


def test_admin_pool_form_refuses_to_break_the_invariant(pool):
    from tenants.admin import CapacityPoolForm

    AllocationFactory(pool=pool, instance_count=100, starts_on=d(2, 1), ends_on=d(2, 28))
    data = {
        "program": pool.program_id, "instance_type": pool.instance_type_id, "region": pool.region,
        "capacity_reservation_id": "", "total_instances": 40, "spare_instances": 0,
        "starts_on": pool.starts_on, "ends_on": pool.ends_on,
    }  # fmt: skip
    form = CapacityPoolForm(data, instance=pool)
    assert not form.is_valid()
    assert "100 instances are allocated" in str(form.non_field_errors())
    pool.refresh_from_db()
    assert pool.total_instances == 127
