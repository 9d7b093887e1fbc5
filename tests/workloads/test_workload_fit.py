"""A workload's parallelism layout beside what it runs on: TP × PP × DP accelerators against the
linked allocation and the workload's live clusters, a warning (never a refusal) where it does not fit."""

import pytest
from django.urls import reverse

from tests.factories import ActiveAllocationFactory, ClusterFactory, WorkloadFactory, instance_type
from workloads.models import Workload
from workloads.records.fit import cluster_accelerators, layout_fit

from .test_workload_pages import FORM

pytestmark = pytest.mark.django_db


@pytest.fixture
def twelve_p5(org):
    return ActiveAllocationFactory(
        organization=org, instance_count=12, pool__instance_type=instance_type("p5.48xlarge")
    )


def test_the_issues_layout_needs_256_accelerators_and_12_p5_hold_96(twelve_p5):
    fit = layout_fit(tp=8, pp=4, dp=8, allocation=twelve_p5)

    assert (fit.needed, fit.allocated, fit.in_clusters) == (256, 96, None)
    assert fit.warnings == [
        f"The layout needs 256 accelerators; allocation A-{twelve_p5.pk} holds 96 (12 × p5.48xlarge). "
        "With TP 8 × PP 4, at most DP 3 fits."
    ]


def test_a_layout_that_fits_has_no_warning(twelve_p5):
    assert layout_fit(tp=8, pp=4, dp=3, allocation=twelve_p5).warnings == []
    assert layout_fit(tp=8, pp=4, dp=8).warnings == []  # nothing to compare with yet


def test_tensor_and_pipeline_parallelism_alone_can_exceed_the_allocation(org):
    two = ActiveAllocationFactory(organization=org, instance_count=2, pool__instance_type=instance_type("p5.48xlarge"))

    [warning] = layout_fit(tp=8, pp=4, dp=1, allocation=two).warnings
    assert warning.endswith("fewer than TP 8 × PP 4 alone.")


def test_tensor_parallelism_wider_than_an_instance_is_flagged(twelve_p5):
    [warning] = layout_fit(tp=16, pp=1, dp=2, allocation=twelve_p5).warnings
    assert "Tensor parallelism 16 spans more than one instance (8 accelerators each)" in warning


def test_expert_parallelism_shards_the_data_parallel_replicas(twelve_p5):
    fit = layout_fit(tp=2, pp=2, dp=8, ep=8, moe=True, allocation=twelve_p5)
    assert (fit.needed, fit.warnings) == (32, [])  # EP adds no accelerators: it divides DP

    [warning] = layout_fit(tp=2, pp=2, dp=6, ep=4, moe=True).warnings
    assert warning == "Expert parallelism shards the data-parallel replicas: DP 6 is not a multiple of EP 4."


def test_clusters_count_the_workers_of_the_live_ones(org, twelve_p5):
    workload = WorkloadFactory(organization=org, allocation=twelve_p5, tensor_parallel=8, pipeline_parallel=4)
    assert cluster_accelerators(workload) is None
    ClusterFactory(organization=org, allocation=twelve_p5, workload=workload, workers=2)
    ClusterFactory(organization=org, allocation=twelve_p5, workload=workload, workers=6, status="deleted")
    ClusterFactory(organization=org, allocation=twelve_p5, workers=6)  # another workload's

    assert cluster_accelerators(workload) == 16  # 2 × 8 H100; the controller group has none in a factory cluster
    fit = layout_fit(tp=8, pp=4, dp=1, allocation=twelve_p5, in_clusters=16)
    assert fit.warnings == ["The layout needs 32 accelerators; this workload's clusters hold 16."]


# --- Pages and API ----------------------------------------------------------------------------------------------


def test_the_form_warns_as_the_layout_is_typed_and_still_records_it(member_client, org, twelve_p5):
    url = reverse("records:create", args=[org.slug])
    layout = {**FORM, "tensor_parallel": "8", "pipeline_parallel": "4", "data_parallel": "8"}

    fragment = member_client.get(url, {**layout, "part": "fit", "allocation": twelve_p5.pk}, HTTP_HX_REQUEST="true")
    assert fragment.status_code == 200
    assert fragment.text.startswith('<div id="workload-fit"')  # only the fragment, swapped in by htmx
    assert "<strong>256</strong> needed" in fragment.text
    assert "<strong>96</strong> in the allocation" in fragment.text
    assert "at most DP 3 fits" in fragment.text

    response = member_client.post(url, {**layout, "allocation": twelve_p5.pk})
    workload = Workload.objects.get()
    assert response.status_code == 302 and workload.world_size == 256  # a warning, not a refusal
    detail = member_client.get(reverse("records:detail", args=[workload.pk])).text
    assert 'data-testid="fit-warning"' in detail and "at most DP 3 fits" in detail


def test_the_fit_fragment_never_reads_another_orgs_allocation(member_client, org, other_org):
    theirs = ActiveAllocationFactory(organization=other_org, instance_count=1)
    url = reverse("records:create", args=[org.slug])

    fragment = member_client.get(
        url, {**FORM, "tensor_parallel": "8", "part": "fit", "allocation": theirs.pk}, HTTP_HX_REQUEST="true"
    )
    assert "in the allocation" not in fragment.text and "fit-warning" not in fragment.text


def test_the_api_answers_the_fit_with_the_workload_it_recorded(member_api, org, twelve_p5):
    from .conftest import WORKLOAD_INPUT

    data = {**WORKLOAD_INPUT, "organization": org.slug, "tensor_parallel": 8, "pipeline_parallel": 4}
    created = member_api.post(
        "/api/v1/workloads/", {**data, "data_parallel": 8, "allocation": twelve_p5.pk}, format="json"
    )
    assert created.status_code == 201, created.json()
    fit = created.json()["fit"]
    assert (fit["needed"], fit["allocated"], fit["in_clusters"]) == (256, 96, None)
    assert "at most DP 3 fits" in fit["warnings"][0]

    fixed = member_api.patch(f"/api/v1/workloads/{created.json()['id']}/", {"data_parallel": 3}, format="json")
    assert fixed.json()["fit"]["warnings"] == []
    assert member_api.get(f"/api/v1/workloads/{created.json()['id']}/").json()["fit"]["needed"] == 96


def test_the_tracking_table_flags_a_layout_its_allocation_cannot_hold(member_client, org, twelve_p5):
    WorkloadFactory(organization=org, name="too-wide", allocation=twelve_p5, tensor_parallel=8, pipeline_parallel=4)
    WorkloadFactory(organization=org, name="fits", allocation=twelve_p5, tensor_parallel=8, data_parallel=12)

    rows = member_client.get(reverse("records:tracking")).text.split("<tr>")[1:]
    [flagged] = [row for row in rows if 'data-testid="outgrows"' in row]
    assert "too-wide" in flagged


def test_on_trainium_a_rank_is_a_neuroncore(org):
    """A trn1.32xlarge has 16 Trainium chips but runs 32 ranks (a NeuronCore each): TP32 inside one instance is
    the usual layout, and 4 of them hold TP32 × DP4."""
    four_trn1 = ActiveAllocationFactory(
        organization=org, instance_count=4, pool__instance_type=instance_type("trn1.32xlarge")
    )
    fit = layout_fit(tp=32, pp=1, dp=4, allocation=four_trn1)
    assert (fit.needed, fit.allocated, fit.warnings) == (128, 128, [])
    workload = WorkloadFactory(
        organization=org, allocation=four_trn1, tensor_parallel=32, pipeline_parallel=1, data_parallel=4
    )
    assert not workload.outgrows_allocation


def test_the_suggested_data_parallelism_divides_into_expert_groups(twelve_p5):
    [warning] = layout_fit(tp=4, pp=2, dp=16, ep=4, moe=True, allocation=twelve_p5).warnings
    assert warning.endswith("With TP 4 × PP 2, at most DP 12 fits.")  # 96 // 8 = 12, a multiple of EP 4


def test_a_revoked_allocation_holds_nothing_to_run_on(twelve_p5):
    twelve_p5.status = "revoked"
    [warning] = layout_fit(tp=8, pp=1, dp=1, allocation=twelve_p5).warnings
    assert warning == f"Allocation A-{twelve_p5.pk} is revoked: link the allocation the workload runs on."


def test_the_live_fit_sends_only_the_layout_not_the_notes(member_client, org):
    """The fragment is a GET: the whole form in its URL broke past gunicorn's 4 KB request line with long notes."""
    page = member_client.get(reverse("records:create", args=[org.slug])).text
    include = page.split('id="workload-fit"')[1].split('hx-include="')[1].split('"')[0]
    assert {name.strip() for name in include.split(",")} == {
        f"[name={field}]"
        for field in ("architecture", "tensor_parallel", "pipeline_parallel", "data_parallel", "expert_parallel")
    } | {"[name=allocation]"}


def test_the_record_shows_the_compute_and_cost_estimate_on_its_allocation(member_client, org, twelve_p5):
    """As the request form does: 6 × 8e9 parameters × 2e12 tokens = 9.6e22 FLOPs at 989 TFLOPS × 0.40 MFU per H100
    is 9.6e22 / 3.956e14 / 3600 = 67,408 accelerator-hours, 8,426 p5 instance-hours, 29.3 days on 12 instances,
    $463,768 at the us-east-1 price of $55.04 an hour."""
    workload = WorkloadFactory(organization=org, allocation=twelve_p5)
    page = member_client.get(reverse("records:detail", args=[workload.pk])).text
    assert "Compute estimate" in page
    assert "67,408" in page and "8,426" in page and "463,768 USD" in page
    assert "29.3 / 68" in page  # days needed on 12 instances / the window's days (7 before today, 60 after)
    unlinked = WorkloadFactory(organization=org, allocation=None)
    assert "Compute estimate" not in member_client.get(reverse("records:detail", args=[unlinked.pk])).text
