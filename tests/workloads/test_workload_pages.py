import csv
import io
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from tests.factories import AllocationFactory, ClusterFactory, OrganizationFactory, WorkloadFactory
from workloads.models import Workload, WorkloadChange
from workloads.records.services import update_workload

pytestmark = pytest.mark.django_db
TRACKING = reverse("records:tracking")
DETAIL_LINK = re.compile(r'href="/workloads/\d+/"')

FORM = {
    "name": "sakura-405b",
    "phase": "pretraining",
    "status": "planned",
    "model_name": "Sakura-LM 405B",
    "architecture": "dense",
    "parameter_count": "405",
    "active_parameter_count": "",
    "target_tokens": "15000",
    "framework": "megatron",
    "tensor_parallel": "8",
    "pipeline_parallel": "8",
    "data_parallel": "16",
    "expert_parallel": "1",
    "cluster_type": "hyperpod_slurm",
    "storage": "fsx_lustre_s3",
    "allocation": "",
    "notes": "",
}


def queries(client, url: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200, response.content[:500]
    return len(captured)


# --- the tracking view ---------------------------------------------------------------------------


def test_a_tenant_tracks_its_own_workloads_only(member_client, workload, other_workload):
    response = member_client.get(TRACKING)
    assert response.status_code == 200
    assert workload.name in response.text
    assert other_workload.name not in response.text
    assert "New workload" in response.text


def test_staff_track_every_orgs_workloads_but_record_none(manager_client, workload, other_workload):
    response = manager_client.get(TRACKING)
    assert workload.name in response.text and other_workload.name in response.text
    assert "New workload" not in response.text


def test_filters_narrow_the_table(manager_client, org, other_org):
    fsdp = WorkloadFactory(organization=org, name="fsdp-run", framework="pytorch_fsdp")
    neuron = WorkloadFactory(
        organization=org, name="trn-run", framework="neuronx", cluster_type="eks", status="running"
    )
    theirs = WorkloadFactory(organization=other_org, name="their-run", framework="neuronx")

    text = manager_client.get(TRACKING, {"framework": "neuronx"}).text
    assert neuron.name in text and theirs.name in text and fsdp.name not in text
    text = manager_client.get(TRACKING, {"framework": "neuronx", "organization": org.slug}).text
    assert neuron.name in text and theirs.name not in text
    text = manager_client.get(TRACKING, {"status": "running", "cluster_type": "eks", "phase": "pretraining"}).text
    assert neuron.name in text and fsdp.name not in text and theirs.name not in text


def test_an_unknown_filter_value_is_a_400_with_the_reason(manager_client, workload):
    response = manager_client.get(TRACKING, {"framework": "tensorflow"})
    assert response.status_code == 400
    assert "Select a valid choice" in response.text
    assert workload.name not in response.text


def test_a_tenant_cannot_filter_on_another_org(member_client, other_org, other_workload):
    response = member_client.get(TRACKING, {"organization": other_org.slug})
    assert response.status_code == 400
    assert other_workload.name not in response.text


def test_sorting_by_size_both_ways(member_client, org):
    for name, size in (("wl-tiny", 1), ("wl-huge", 405), ("wl-mid", 70)):
        WorkloadFactory(organization=org, name=name, parameter_count=size * 10**9)
    text = member_client.get(TRACKING, {"sort": "params"}).text
    assert text.index(">wl-tiny<") < text.index(">wl-mid<") < text.index(">wl-huge<")
    text = member_client.get(TRACKING, {"sort": "-params"}).text
    assert text.index(">wl-huge<") < text.index(">wl-mid<") < text.index(">wl-tiny<")


def test_htmx_gets_only_the_table_fragment(member_client, workload):
    response = member_client.get(TRACKING, {"sort": "name"}, headers={"HX-Request": "true"})
    assert response.status_code == 200
    assert "<html" not in response.text
    assert 'id="workload-table"' in response.text and workload.name in response.text
    assert "HX-Request" in response["Vary"]


def test_going_back_to_a_pushed_url_gets_the_whole_page(member_client, workload):
    # htmx asks for a pushed URL it no longer has cached: a fragment would replace the whole page.
    headers = {"HX-Request": "true", "HX-History-Restore-Request": "true"}
    response = member_client.get(TRACKING, {"sort": "name"}, headers=headers)
    assert "<html" in response.text and workload.name in response.text


def test_the_table_is_paginated(member_client, org):
    WorkloadFactory.create_batch(55, organization=org)
    first = member_client.get(TRACKING)
    assert len(DETAIL_LINK.findall(first.text)) == 50
    assert "Page 1 of 2 (55 in all)" in first.text
    assert len(DETAIL_LINK.findall(member_client.get(TRACKING, {"page": 2}).text)) == 5


def test_empty_states(member_client, workload):
    Workload.objects.all().delete()
    assert "No workloads recorded yet." in member_client.get(TRACKING).text
    assert "No workload matches these filters." in member_client.get(TRACKING, {"framework": "jax"}).text


def test_the_tracking_view_runs_a_fixed_number_of_queries(manager_client, org):
    def grow(count):
        for _ in range(count):
            other = OrganizationFactory()
            allocation = AllocationFactory(organization=other)
            WorkloadFactory(organization=other, allocation=allocation)

    grow(3)
    small = queries(manager_client, TRACKING)
    grow(20)
    assert queries(manager_client, TRACKING) == small


def test_the_instances_column_counts_the_workloads_own_live_clusters(member_client, org, allocation):
    """the workload's clusters' worker instances, beside what its allocation holds."""
    busy = WorkloadFactory(organization=org, name="busy", allocation=allocation)
    idle = WorkloadFactory(organization=org, name="idle", allocation=allocation)
    ClusterFactory(organization=org, allocation=allocation, workload=busy, workers=3)
    ClusterFactory(organization=org, allocation=allocation, workload=busy, workers=2)
    ClusterFactory(organization=org, allocation=allocation, workload=busy, workers=1, status="deleted")
    ClusterFactory(organization=org, allocation=allocation, workload=None, workers=2)  # not the workload's

    rows = re.findall(r'data-testid="instances">(.*?)</td>', member_client.get(TRACKING, {"sort": "-instances"}).text)
    assert rows == [f"5<br><small>of {allocation.instance_count} × p5.48xlarge</small>"] + [
        f"—<br><small>of {allocation.instance_count} × p5.48xlarge</small>"
    ]
    export = member_client.get(reverse("records:export"), {"sort": "instances"}).content.decode()
    csv_rows = list(csv.DictReader(io.StringIO(export)))
    assert [(r["workload"], r["cluster_instances"], r["instances"]) for r in csv_rows] == [
        (idle.name, "0", str(allocation.instance_count)),
        (busy.name, "5", str(allocation.instance_count)),
    ]


# --- CSV and the printable document --------------------------------------------------------------


def test_csv_export_follows_the_filters_and_neutralizes_formulas(member_client, org, other_workload, allocation):
    WorkloadFactory(organization=org, name="=HYPERLINK(evil)", framework="jax", allocation=allocation)
    WorkloadFactory(organization=org, name="fsdp-run", framework="pytorch_fsdp")
    response = member_client.get(reverse("records:export"), {"framework": "jax"})
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode("utf-8-sig"))))
    assert [r["workload"] for r in rows] == ["'=HYPERLINK(evil)"]
    assert rows[0]["framework"] == "JAX" and rows[0]["instances"] == "8" and rows[0]["instance_type"] == "p5.48xlarge"
    # The shared export (portal.exports): byte-order mark, header first, numbers left as numbers.
    assert response.content.startswith("\ufeff".encode()) and next(iter(rows[0])) == "organization"
    for column in ("parameters", "target_tokens", "allocation_id", "instances", "tensor_parallel"):
        assert rows[0][column] == "" or int(rows[0][column]) >= 0, column


def test_csv_export_rejects_bad_filters(member_client):
    assert member_client.get(reverse("records:export"), {"status": "nope"}).status_code == 400


def test_the_csv_export_runs_a_fixed_number_of_queries(manager_client):
    WorkloadFactory.create_batch(3)
    small = queries(manager_client, reverse("records:export"))
    WorkloadFactory.create_batch(30, allocation=None)
    assert queries(manager_client, reverse("records:export")) == small


def test_the_tracking_document_has_one_page_per_org(manager_client, workload, other_workload, allocation):
    Workload.objects.filter(pk=workload.pk).update(allocation=allocation)
    response = manager_client.get(reverse("records:print"))
    assert response.status_code == 200
    assert response.text.count('class="print-page"') == 2
    assert workload.name in response.text and other_workload.name in response.text
    assert f"A-{allocation.pk}" in response.text


def test_a_searched_tracking_document_prints_only_the_orgs_it_found(manager_client, workload, other_workload):
    everything = manager_client.get(reverse("records:print"), {"q": ""})
    assert everything.text.count('class="print-page"') == 2  # an empty search is no search
    found = manager_client.get(reverse("records:print"), {"q": other_workload.name})
    assert found.text.count('class="print-page"') == 1
    assert other_workload.organization.name in found.text and workload.organization.name not in found.text


def test_a_tenants_tracking_document_is_its_own_org_only(member_client, workload, other_workload):
    response = member_client.get(reverse("records:print"))
    assert response.text.count('class="print-page"') == 1
    assert other_workload.name not in response.text and other_workload.organization.name not in response.text


def test_the_tracking_document_runs_a_fixed_number_of_queries(manager_client):
    def grow(count):
        for _ in range(count):
            other = OrganizationFactory()
            WorkloadFactory.create_batch(2, organization=other, allocation=AllocationFactory(organization=other))

    grow(2)
    small = queries(manager_client, reverse("records:print"))
    grow(10)
    assert queries(manager_client, reverse("records:print")) == small


# --- recording and editing -----------------------------------------------------------------------


def test_a_member_records_a_workload_through_the_form(member_client, member, org, allocation):
    url = reverse("records:create", args=[org.slug])
    assert member_client.get(url).status_code == 200
    response = member_client.post(url, {**FORM, "allocation": allocation.pk})
    workload = Workload.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("records:detail", args=[workload.pk])
    assert (workload.parameter_count, workload.target_tokens) == (405 * 10**9, 15 * 10**12)
    assert workload.allocation == allocation and workload.created_by == member
    assert workload.changes.get().kind == WorkloadChange.Kind.CREATED


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"parameter_count": "-8"}, "greater than or equal to 0.001"),
        ({"framework": "tensorflow"}, "Select a valid choice"),
        ({"architecture": "moe", "active_parameter_count": "500"}, "Active parameters cannot exceed"),
        ({"tensor_parallel": "0"}, "greater than or equal to 1"),
    ],
)
def test_bad_form_input_is_shown_and_nothing_is_written(member_client, org, change, message):
    response = member_client.post(reverse("records:create", args=[org.slug]), {**FORM, **change})
    assert response.status_code == 400
    assert message in response.text
    assert not Workload.objects.exists()


def test_another_orgs_allocation_is_not_a_choice(member_client, org, other_allocation):
    response = member_client.post(
        reverse("records:create", args=[org.slug]), {**FORM, "allocation": other_allocation.pk}
    )
    assert response.status_code == 400
    assert "Select a valid choice" in response.text
    assert not Workload.objects.exists()


def test_staff_cannot_open_the_workload_forms(manager_client, org, workload):
    assert manager_client.get(reverse("records:create", args=[org.slug])).status_code == 403
    assert manager_client.post(reverse("records:edit", args=[workload.pk]), FORM).status_code == 403
    assert not workload.changes.exists()


def test_editing_records_only_the_fields_that_changed(member_client, member, workload):
    form = {**FORM, "name": workload.name, "parameter_count": "8", "target_tokens": "2000", "data_parallel": "64"}
    form.update({"tensor_parallel": "1", "pipeline_parallel": "1", "framework": "pytorch_fsdp"})
    form.update({"model_name": workload.model_name, "status": "running"})
    response = member_client.post(reverse("records:edit", args=[workload.pk]), form)
    assert response.status_code == 302
    assert list(workload.changes.values_list("field", "old_value", "new_value", "actor")) == [
        ("status", "planned", "running", member.pk)
    ]


def test_the_detail_page_shows_the_history_with_who_changed_what(member_client, member, workload, manager_client):
    update_workload(user=member, workload=workload, data={"status": "running", "data_parallel": 128})
    text = member_client.get(reverse("records:detail", args=[workload.pk])).text
    assert "Data parallel degree" in text and "128" in text and member.username in text
    assert "Running" in text and "Edit" in text
    staff_text = manager_client.get(reverse("records:detail", args=[workload.pk])).text
    assert "Data parallel degree" in staff_text and f"workloads/{workload.pk}/edit/" not in staff_text


def test_the_detail_page_runs_a_fixed_number_of_queries(member_client, member, workload):
    url = reverse("records:detail", args=[workload.pk])
    update_workload(user=member, workload=workload, data={"status": "running"})
    small = queries(member_client, url)
    for parallel in range(2, 30):
        update_workload(user=member, workload=workload, data={"data_parallel": parallel, "notes": str(parallel)})
    assert queries(member_client, url) == small


def test_the_edit_form_shows_sizes_in_billions_as_plain_numbers(member_client, member, workload):
    update_workload(
        user=member, workload=workload, data={"parameter_count": 70_000_000_000, "target_tokens": 1_500_000_000}
    )
    page = member_client.get(reverse("records:edit", args=[workload.pk])).text
    assert 'name="parameter_count" value="70"' in page and 'name="target_tokens" value="1.5"' in page


def test_sizes_beyond_any_model_get_field_errors_in_the_form(member_client, org):
    form = {**FORM, "parameter_count": "200000", "tensor_parallel": "1000000"}
    response = member_client.post(reverse("records:create", args=[org.slug]), form)
    assert response.status_code == 400
    assert "Ensure this value is less than or equal to 100000." in response.text  # billions, as typed
    assert "Ensure this value is less than or equal to 65536." in response.text
    assert not Workload.objects.exists()


def test_history_groups_the_digits_of_counts(member_client, member, workload):
    update_workload(user=member, workload=workload, data={"parameter_count": 70_000_000_000})
    text = member_client.get(reverse("records:detail", args=[workload.pk])).text
    assert "70,000,000,000" in text and "70000000000" not in text
