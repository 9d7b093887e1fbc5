"""POST /api/v1/clusters/{id}/nccl-tests/: the real p5 logs judged against the catalog's baseline, a suspect run
marking the cluster and going to a networking case, and a passing one clearing both."""

from decimal import Decimal

import pytest
from rest_framework.test import APIClient

from tests.factories import ClusterFactory, StaffRoleFactory, instance_type
from tests.validation.test_nccl import MPIRUN_LOG, SRUN_LOG
from workloads.models import CaseEvent, Cluster, NcclBaseline, NcclValidation, SupportCase
from workloads.reporting.services import issue_token
from workloads.validation.services import baseline_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def cluster(org):
    return ClusterFactory(organization=org, name="p5-train")


@pytest.fixture
def reporter(cluster, member):
    _token, key = issue_token(user=member, cluster=cluster, name="head node")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def post(client, cluster, log, **fields):
    return client.post(f"/api/v1/clusters/{cluster.pk}/nccl-tests/", {"log": log, **fields}, format="json")


def test_the_catalog_holds_the_p5_baseline_from_the_real_sample():
    baseline = NcclBaseline.objects.get(instance_type__api_name="p5.48xlarge", nodes=2)
    assert (baseline.busbw_gbps, baseline.size_bytes, baseline.min_fraction) == (487.0, 16 * 2**30, Decimal("0.90"))
    assert "awsome-distributed-training" in baseline.source


def test_the_srun_run_passes_at_487_gb_per_s(reporter, cluster):
    response = post(reporter, cluster, SRUN_LOG, nodes=2)
    assert response.status_code == 201, response.json()
    body = response.json()
    assert (body["verdict"], body["peak_busbw_gbps"], body["peak_size_bytes"]) == ("passed", 487.26, 16 * 2**30)
    assert (body["baseline_busbw_gbps"], body["baseline_nodes"], body["nodes"]) == (487.0, 2, 2)
    assert body["fraction"] == pytest.approx(487.26 / 487)
    assert len(body["rows"]) == 32 and body["rows"][-1] == [17179869184, 487.09, 487.26]
    assert SupportCase.objects.count() == 0
    cluster.refresh_from_db()
    assert cluster.interconnect_suspect_since is None


def test_the_mpirun_run_reports_its_average_and_is_suspect_short_of_large_messages(reporter, cluster, org):
    lead = StaffRoleFactory(role="support_engineer").user
    org.lead_engineer = lead
    org.save()
    response = post(reporter, cluster, MPIRUN_LOG, nodes=2)
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["avg_busbw_gbps"] == 52.9753
    assert (body["peak_busbw_gbps"], body["out_of_bounds"], body["verdict"]) == (437.89, 0, "suspect")
    assert "below 90%" in body["reasons"][0]
    cluster.refresh_from_db()
    assert cluster.interconnect_suspect_since is not None
    case = SupportCase.objects.get()
    assert (case.category, case.cluster, case.severity, case.assignee) == ("networking", cluster, "s3", lead)
    assert "437.89 GB/s" in case.description and "487 GB/s" in case.description
    assert NcclValidation.objects.get().case == case

    # A second suspect run adds to the same case; a passing one clears the mark and says so on it.
    post(reporter, cluster, MPIRUN_LOG.replace("52.9753", "51.0002"), nodes=2)
    assert SupportCase.objects.count() == 1
    assert CaseEvent.objects.filter(case=case, kind="comment").count() == 1
    post(reporter, cluster, SRUN_LOG, nodes=2)
    cluster.refresh_from_db()
    assert cluster.interconnect_suspect_since is None
    last = CaseEvent.objects.filter(case=case, kind="comment").order_by("pk").last()
    assert last.body.startswith("Condition cleared") and "487.26 GB/s" in last.body
    assert SupportCase.objects.get().status == "open"


def test_the_node_count_comes_from_the_logs_rank_lines_when_it_has_them(reporter, cluster):
    ranks = "".join(
        f"#  Rank {r} Group  0 Pid  {100 + r} on ip-10-1-0-{1 + r // 8} device  {r % 8} [0x53] NVIDIA H100 80GB HBM3\n"
        for r in range(16)
    )
    response = post(reporter, cluster, ranks + SRUN_LOG)
    assert response.status_code == 201, response.json()
    assert (response.json()["nodes"], response.json()["ranks"]) == (2, 16)
    assert post(reporter, cluster, ranks + SRUN_LOG, nodes=4).json() == {
        "nodes": ["The log ran on 2 hosts (its Rank lines), not 4."]
    }


def test_a_log_without_its_node_count_asks_for_it(reporter, cluster):
    response = post(reporter, cluster, SRUN_LOG)
    assert response.status_code == 400
    assert "give nodes" in response.json()["nodes"][0]
    assert not NcclValidation.objects.exists()


def line_of(log: str, text: str) -> int:
    return log[: log.index(text)].count("\n") + 1


CUT = SRUN_LOG[: SRUN_LOG.index("487.26") + len("487.2")]  # the copy stopped in the middle of the last row
BAD = SRUN_LOG.replace("487.26", "487.2x")


@pytest.mark.parametrize(
    ("log", "says"),
    [
        (CUT, f"line {line_of(CUT, '487.2')}: the log ends in the middle of this line"),
        (BAD, f"line {line_of(BAD, '487.2x')}: the in-place busbw '487.2x' is not a number"),
        ("just some words\n", "no result table"),
        (SRUN_LOG + MPIRUN_LOG, "a second result table starts here"),
    ],
)
def test_a_damaged_log_is_a_400_naming_the_line_and_keeps_nothing(reporter, cluster, log, says):
    response = post(reporter, cluster, log, nodes=2)
    assert response.status_code == 400
    assert says in response.json()["log"][0]
    assert not NcclValidation.objects.exists() and not SupportCase.objects.exists()


def test_the_log_may_be_posted_as_text(reporter, cluster):
    response = reporter.post(f"/api/v1/clusters/{cluster.pk}/nccl-tests/?nodes=2", SRUN_LOG, content_type="text/plain")
    assert response.status_code == 201, response.json()


def test_no_baseline_for_the_type_records_the_run_unjudged(org, member):
    from tests.factories import ActiveAllocationFactory

    trn1 = ActiveAllocationFactory(organization=org, pool__instance_type=instance_type("trn1n.32xlarge"))
    cluster = ClusterFactory(organization=org, allocation=trn1)
    client = APIClient()
    client.force_authenticate(member)
    body = post(client, cluster, SRUN_LOG, nodes=2).json()
    assert (body["verdict"], body["instance_type"], body["baseline_busbw_gbps"]) == (
        "no_baseline",
        "trn1n.32xlarge",
        None,
    )
    cluster.refresh_from_db()
    assert cluster.interconnect_suspect_since is None and not SupportCase.objects.exists()


def test_a_larger_run_is_judged_against_the_nearest_smaller_multinode_baseline():
    assert baseline_for("p5.48xlarge", 16).nodes == 2
    assert baseline_for("p5.48xlarge", 1) is None  # a single-node run has no cross-node baseline
    NcclBaseline.objects.create(instance_type=instance_type("p5.48xlarge"), nodes=8, size_bytes=2**34, busbw_gbps=470)
    assert baseline_for("p5.48xlarge", 16).nodes == 8
    assert baseline_for("p5.48xlarge", 4).nodes == 2


def test_another_clusters_token_and_another_orgs_member_get_404(reporter, cluster, org, outsider):
    other = ClusterFactory(organization=org)
    assert post(reporter, other, SRUN_LOG, nodes=2).status_code == 404
    client = APIClient()
    client.force_authenticate(outsider)
    assert post(client, cluster, SRUN_LOG, nodes=2).status_code == 404
    assert not NcclValidation.objects.exists()


def test_a_tenant_reads_its_own_validations_only(reporter, cluster, member, outsider):
    post(reporter, cluster, SRUN_LOG, nodes=2)
    mine, theirs = APIClient(), APIClient()
    mine.force_authenticate(member)
    theirs.force_authenticate(outsider)
    assert mine.get("/api/v1/nccl-validations/").json()["count"] == 1
    assert theirs.get("/api/v1/nccl-validations/").json()["count"] == 0
    validation = NcclValidation.objects.get()
    assert theirs.get(f"/api/v1/nccl-validations/{validation.pk}/").status_code == 404
    assert Cluster.objects.get().interconnect_suspect_since is None


def test_the_same_log_posted_again_is_the_same_run(reporter, cluster):
    first = post(reporter, cluster, MPIRUN_LOG, nodes=2)
    again = post(reporter, cluster, MPIRUN_LOG, nodes=2)  # the reporter's retry after a timeout
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["id"] == first.json()["id"]
    assert NcclValidation.objects.count() == 1
    case = SupportCase.objects.get()
    assert not CaseEvent.objects.filter(case=case, kind="comment").exists()  # no second word on the case


@pytest.mark.parametrize(
    ("log", "says"),
    [
        (MPIRUN_LOG.replace("52.9753", "1e999"), "the average bus bandwidth '1e999' is not a number"),
        (SRUN_LOG.replace("487.26", "1e999"), "the in-place busbw '1e999' is not a number"),
        (MPIRUN_LOG.replace("values : 0 OK", "values : 99999999999999999999999 OK"), "out of range"),
    ],
)
def test_numbers_no_column_can_hold_are_refused(reporter, cluster, log, says):
    response = post(reporter, cluster, log, nodes=2)
    assert response.status_code == 400
    assert says in response.json()["log"][0]
    assert not NcclValidation.objects.exists()
    assert reporter.get("/api/v1/nccl-validations/").status_code == 401  # a reporter token reads nothing
