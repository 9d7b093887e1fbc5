from datetime import UTC, datetime

import pytest
import time_machine
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404

from tests.factories import WorkloadFactory
from tests.workloads.conftest import WORKLOAD_INPUT
from workloads.models import Workload, WorkloadChange
from workloads.records.services import create_workload, update_workload

pytestmark = pytest.mark.django_db


def test_member_records_a_workload_and_its_creation_is_in_the_history(member, org):
    workload = create_workload(user=member, organization=org, data=dict(WORKLOAD_INPUT))

    assert workload.organization == org and workload.created_by == member
    assert workload.world_size == 8 * 8 * 16
    [created] = workload.changes.all()
    assert (created.kind, created.actor, created.organization) == (WorkloadChange.Kind.CREATED, member, org)


def test_history_records_each_changed_field_with_who_when_from_and_to(workload, colleague, allocation):
    when = datetime(2027, 2, 3, 1, 30, tzinfo=UTC)
    with time_machine.travel(when, tick=False):
        update_workload(
            user=colleague,
            workload=workload,
            data={
                "status": "running",
                "data_parallel": 128,
                "framework": workload.framework,  # unchanged: no history row
                "allocation": allocation,
            },
        )

    changes = {c.field: c for c in WorkloadChange.objects.filter(workload=workload, kind="changed")}
    assert set(changes) == {"status", "data_parallel", "allocation"}
    status = changes["status"]
    assert (status.actor, status.changed_at, status.old_value, status.new_value) == (
        colleague,
        when,
        "planned",
        "running",
    )
    assert (status.old_display, status.new_display) == ("Planned", "Running")
    assert (changes["data_parallel"].old_display, changes["data_parallel"].new_display) == ("64", "128")
    assert (changes["data_parallel"].old_value, changes["data_parallel"].new_value) == ("64", "128")
    assert changes["allocation"].old_value == ""
    assert "8 × p5.48xlarge" in changes["allocation"].new_value
    workload.refresh_from_db()
    assert (workload.status, workload.data_parallel, workload.allocation) == ("running", 128, allocation)


def test_saving_the_same_values_records_nothing(workload, member):
    update_workload(user=member, workload=workload, data={"status": workload.status, "name": workload.name})
    assert not workload.changes.exists()


def test_program_staff_read_workloads_but_cannot_write_them(manager, workload, org):
    with pytest.raises(PermissionDenied):
        update_workload(user=manager, workload=workload, data={"status": "running"})
    with pytest.raises(PermissionDenied):
        create_workload(user=manager, organization=org, data=dict(WORKLOAD_INPUT))
    assert Workload.objects.count() == 1 and not WorkloadChange.objects.exists()


def test_a_tenant_cannot_write_another_orgs_workload(outsider, workload, org):
    with pytest.raises(Http404):
        update_workload(user=outsider, workload=workload, data={"status": "running"})
    with pytest.raises(Http404):
        create_workload(user=outsider, organization=org, data=dict(WORKLOAD_INPUT))


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"parameter_count": -5}, "parameter_count", "At least 1,000,000 parameters."),
        ({"target_tokens": 0}, "target_tokens", "At least 1,000,000 tokens."),
        ({"tensor_parallel": 0}, "tensor_parallel", "greater than or equal to 1"),
        ({"framework": "tensorflow"}, "framework", "not a valid choice"),
        ({"phase": "vibes"}, "phase", "not a valid choice"),
        ({"architecture": "moe", "active_parameter_count": None}, "active_parameter_count", "needs its active"),
        (
            {"architecture": "moe", "parameter_count": 57 * 10**9, "active_parameter_count": 60 * 10**9},
            "active_parameter_count",
            "cannot exceed",
        ),
        ({"active_parameter_count": 10**9}, "active_parameter_count", "dense model uses every parameter"),
        ({"expert_parallel": 8}, "expert_parallel", "mixture-of-experts models only"),
        ({"name": ""}, "name", "cannot be blank"),
    ],
)
def test_bad_input_is_a_field_error_and_writes_nothing(member, org, change, field, message):
    with pytest.raises(ValidationError) as error:
        create_workload(user=member, organization=org, data={**WORKLOAD_INPUT, **change})
    assert message in " ".join(error.value.message_dict[field])
    assert not Workload.objects.exists() and not WorkloadChange.objects.exists()


def test_an_invalid_edit_changes_neither_the_record_nor_its_history(workload, member):
    with pytest.raises(ValidationError):
        update_workload(user=member, workload=workload, data={"status": "running", "parameter_count": -1})
    workload.refresh_from_db()
    assert workload.status == "planned" and not workload.changes.exists()


def test_another_orgs_allocation_cannot_be_linked(member, org, workload, other_allocation):
    with pytest.raises(ValidationError) as error:
        update_workload(user=member, workload=workload, data={"allocation": other_allocation})
    assert error.value.message_dict == {"allocation": ["This allocation belongs to another organization."]}
    workload.refresh_from_db()
    assert workload.allocation is None and not workload.changes.exists()


def test_names_are_unique_within_an_org_only(member, org, workload, other_org):
    with pytest.raises(ValidationError) as error:
        create_workload(user=member, organization=org, data={**WORKLOAD_INPUT, "name": workload.name})
    assert "already has a workload with this name" in error.value.message_dict["name"][0]
    WorkloadFactory(organization=other_org, name=workload.name)  # another org may use the same name


def test_history_rows_cannot_be_edited(workload, member):
    update_workload(user=member, workload=workload, data={"status": "running"})
    change = workload.changes.get()
    change.new_value = "completed"
    with pytest.raises(ValueError, match="append-only"):
        change.save()
