import pytest
from django.core.management import CommandError, call_command

from workloads.models import ActionItem, CaseEvent, ReviewMeeting, SupportCase, Workload, WorkloadChange

pytestmark = pytest.mark.django_db


def counts() -> tuple[int, ...]:
    models = (Workload, WorkloadChange, SupportCase, CaseEvent, ReviewMeeting, ActionItem)
    return tuple(model.objects.count() for model in models)


def test_the_demo_workloads_load_through_the_services_and_only_once():
    call_command("load_demo", "--start", "2026-10-01")
    call_command("load_demo_workloads")
    first = counts()
    assert first[0] == 4 and first[2] == 2 and first[4] == 1 and first[5] == 1
    assert CaseEvent.objects.filter(internal=True).exists()  # the demo shows an internal note to staff
    assert WorkloadChange.objects.filter(field="status").exists()  # and a workload's history
    call_command("load_demo_workloads")
    assert counts() == first


def test_the_demo_workloads_need_the_demo_program():
    with pytest.raises(CommandError, match="load_demo"):
        call_command("load_demo_workloads")
