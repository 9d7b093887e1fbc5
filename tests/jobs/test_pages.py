"""Where jobs show: the job list (per cluster and per workload), the cluster page, the workload page, the cluster's
interconnect and reporter pages; a tenant sees its own only, and a page takes the same queries at any size."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from tests.charts import chart_payload, series
from tests.factories import ClusterFactory, JobFactory, NcclValidationFactory, SupportCaseFactory, WorkloadFactory
from tests.validation.test_nccl import SRUN_LOG
from workloads.models import Cluster, NcclValidation, ReporterToken
from workloads.validation.services import record_validation

pytestmark = pytest.mark.django_db


@pytest.fixture
def cluster(org):
    return ClusterFactory(organization=org, name="p5-train", workload=WorkloadFactory(organization=org, name="llm-70b"))


def test_the_job_list_of_a_cluster_says_what_runs_now_by_user_and_partition(member_client, cluster):
    JobFactory(cluster=cluster, job_id="1", state="RUNNING", ended_at=None, user="alice", accelerators=16)
    JobFactory(cluster=cluster, job_id="2", state="RUNNING", ended_at=None, user="bob", partition="eval")
    JobFactory(cluster=cluster, job_id="3", state="RUNNING", ended_at=None, user="bob",
               state_unknown_since=timezone.now())  # fmt: skip
    JobFactory(cluster=cluster, job_id="4", state="COMPLETED")
    JobFactory(cluster=ClusterFactory(organization=cluster.organization), job_id="5", state="RUNNING", ended_at=None)
    response = member_client.get("/jobs/", {"cluster": cluster.pk})
    assert response.status_code == 200
    assert [j.job_id for j in response.context["page"].object_list] == ["4", "3", "2", "1"]
    assert response.context["running"] == {"jobs": 2, "accelerators": 24}  # job 3's state is unknown
    assert [(r["name"], r["accelerators"]) for r in response.context["by_user"]] == [("alice", 16), ("bob", 8)]
    assert [r["name"] for r in response.context["by_partition"]] == ["p5", "eval"]
    assert "state unknown" in response.text


def test_by_user_tells_the_same_username_of_two_organizations_apart(manager_client, cluster, other_org):
    """ "alice" of two organizations are two people; the program's summary merged them."""
    theirs = ClusterFactory(organization=other_org, name="p5-theirs")
    JobFactory(cluster=cluster, job_id="1", state="RUNNING", ended_at=None, user="alice", accelerators=16)
    JobFactory(cluster=theirs, job_id="1", state="RUNNING", ended_at=None, user="alice", accelerators=8)
    response = manager_client.get("/jobs/")
    rows = [(r["name"], r["scope"], r["accelerators"]) for r in response.context["by_user"]]
    assert rows == [("alice", cluster.organization.name, 16), ("alice", other_org.name, 8)]
    partitions = {(r["scope"], r["accelerators"]) for r in response.context["by_partition"]}
    assert partitions == {("p5-train", 16), ("p5-theirs", 8)}  # a partition is a cluster's


def test_a_filter_shows_running_unknown_or_finished(member_client, cluster):
    JobFactory(cluster=cluster, job_id="1", state="RUNNING", ended_at=None)
    JobFactory(cluster=cluster, job_id="2", state="RUNNING", ended_at=None, state_unknown_since=timezone.now())
    JobFactory(cluster=cluster, job_id="3", state="FAILED")
    for show, expected in (("running", ["1"]), ("unknown", ["2"]), ("finished", ["3"])):
        page = member_client.get("/jobs/", {"cluster": cluster.pk, "show": show}).context["page"]
        assert [j.job_id for j in page.object_list] == expected, show


def test_the_job_list_of_a_workload_spans_its_clusters(member_client, cluster, org):
    other = ClusterFactory(organization=org, workload=cluster.workload)
    JobFactory(cluster=cluster, job_id="1")
    JobFactory(cluster=other, job_id="2")
    JobFactory(cluster=ClusterFactory(organization=org), job_id="3")  # no workload
    page = member_client.get("/jobs/", {"workload": cluster.workload.pk}).context["page"]
    assert sorted(j.job_id for j in page.object_list) == ["1", "2"]


def test_another_orgs_cluster_in_the_filter_answers_like_a_missing_one(member_client, other_org):
    theirs = ClusterFactory(organization=other_org)
    JobFactory(cluster=theirs)
    response = member_client.get("/jobs/", {"cluster": theirs.pk})
    missing = member_client.get("/jobs/", {"cluster": 99999})
    assert response.status_code == missing.status_code == 400
    assert not response.context["page"].object_list


def test_the_job_list_takes_the_same_queries_for_200_jobs_as_for_2(member_client, cluster):
    def queries(count):
        JobFactory.create_batch(count, cluster=cluster)
        with CaptureQueriesContext(connection) as captured:
            member_client.get("/jobs/", {"cluster": cluster.pk})
        return len(captured)

    assert queries(2) == queries(198)


def test_the_cluster_page_shows_jobs_interconnect_reporter_and_cases(member_client, cluster):
    JobFactory(cluster=cluster, job_id="77", state="RUNNING", ended_at=None)
    record_validation(cluster=cluster, log=SRUN_LOG, nodes=2)
    case = SupportCaseFactory(organization=cluster.organization, cluster=cluster, title="Xid 79 on i-1")
    Cluster.objects.filter(pk=cluster.pk).update(last_report_at=timezone.now())
    response = member_client.get(f"/clusters/{cluster.pk}/")
    for text in ("1 job running on 8 accelerators", "77", "Passed", "487.26 GB/s on 2 nodes", "reporting",
                 f"#{case.pk} Xid 79 on i-1", f"/clusters/{cluster.pk}/health/"):  # fmt: skip
        assert text in response.text, text


def test_the_workload_page_lists_its_clusters_and_jobs(member_client, cluster):
    JobFactory(cluster=cluster, job_id="4242", name="pretrain-70b")
    response = member_client.get(f"/workloads/{cluster.workload.pk}/")
    assert "p5-train" in response.text and "4242" in response.text and "pretrain-70b" in response.text


def test_the_interconnect_page_charts_the_latest_run_against_its_baseline(member_client, cluster):
    older = NcclValidationFactory(cluster=cluster, verdict="suspect", peak_busbw_gbps=300)
    NcclValidation.objects.filter(pk=older.pk).update(submitted_at=timezone.now() - timedelta(days=1))
    record_validation(cluster=cluster, log=SRUN_LOG, nodes=2)
    response = member_client.get(f"/clusters/{cluster.pk}/interconnect/")
    assert response.status_code == 200
    option = chart_payload(response.text, "chart-nccl-chart")["option"]
    assert 'data-testid="nccl-chart"' in response.text
    sizes = option["xAxis"]["data"]
    assert sizes[0] == "8 B" and sizes[-1] == "16 GiB"  # a column per size of the log, 0 B left out
    # Both lines on hover (one tooltip lists every series); the in-place line drawn over the wide out-of-place one.
    assert series(option, "out-of-place")["data"][-1] == 487.09 and series(option, "in-place")["data"][-1] == 487.26
    assert option["tooltip"]["trigger"] == "axis"
    # The baseline and the suspect line say what they are where they are drawn; ECharts rounds the axis' ticks.
    baseline = series(option, "baseline 487 GB/s")
    assert baseline["markLine"]["label"]["formatter"] == "baseline 487 GB/s" and baseline["data"][0] == 487
    suspect = series(option, "suspect below 438 GB/s")
    assert suspect["markLine"]["label"]["formatter"] == "suspect below 438 GB/s"
    assert '<th scope="row">16 GiB</th><td class="num">487.09</td><td class="num">487.26</td>' in response.text
    chosen = member_client.get(f"/clusters/{cluster.pk}/interconnect/", {"run": older.pk}).context["run"]
    assert chosen == older
    assert member_client.get(f"/clusters/{cluster.pk}/interconnect/", {"run": "x"}).status_code == 200


def test_the_run_card_and_the_history_say_a_run_alike(member_client, cluster):
    """The card said 99.8% and 267.3 where the history said 100% and 267.30 for the same run."""
    NcclValidationFactory(cluster=cluster, peak_busbw_gbps=486.0, fraction=486.0 / 487.0, avg_busbw_gbps=267.3)
    text = member_client.get(f"/clusters/{cluster.pk}/interconnect/").text
    assert text.count("99.8%") == 2 and "100%" not in text
    assert text.count("267.30") == 2  # both to two places, as the peak


def test_the_reporter_page_issues_a_token_shown_once_and_revokes_it(member_client, cluster):
    response = member_client.post(f"/clusters/{cluster.pk}/reporter/", {"name": "head node"})
    assert response.status_code == 200
    key = response.context["new"]["key"]
    assert key.startswith("fmc_") and key in response.text
    assert key not in member_client.get(f"/clusters/{cluster.pk}/reporter/").text  # never shown again
    guide = response.context["guide"]
    assert f"FMP_CLUSTER_ID={cluster.pk}" in guide and "FMP_PORTAL_URL=http://" in guide
    token = ReporterToken.objects.get()
    assert member_client.post(f"/reporter-tokens/{token.pk}/revoke/").status_code == 302
    token.refresh_from_db()
    assert token.revoked_at is not None


def test_support_engineers_see_the_reporter_page_but_issue_nothing(support_client, cluster):
    assert support_client.get(f"/clusters/{cluster.pk}/reporter/").status_code == 200
    assert support_client.post(f"/clusters/{cluster.pk}/reporter/", {"name": "x"}).status_code == 403
    assert not ReporterToken.objects.exists()


def test_the_script_downloads_as_a_file(client):
    response = client.get("/reporter/fmp_reporter.py")
    assert response.status_code == 200
    assert b"fmp-reporter" in b"".join(response.streaming_content)
    assert "attachment" in response["Content-Disposition"]


def test_the_job_list_sorts_by_its_columns_in_place(manager_client, cluster):
    """?sort=accelerators / -accelerators / user, in place through htmx; the default is newest."""
    now = timezone.now()
    JobFactory(cluster=cluster, job_id="1", user="carol", accelerators=8, submitted_at=now - timedelta(hours=3))
    JobFactory(cluster=cluster, job_id="2", user="alice", accelerators=32, submitted_at=now - timedelta(hours=2))
    JobFactory(cluster=cluster, job_id="3", user="bob", accelerators=16, submitted_at=now - timedelta(hours=1))
    for sort, expected in (("", "321"), ("accelerators", "132"), ("-accelerators", "231"), ("user", "231")):
        page = manager_client.get("/jobs/", {"sort": sort}, headers={"HX-Request": "true"})
        assert page.status_code == 200 and "<html" not in page.text
        assert "".join(job.job_id for job in page.context["page"].object_list) == expected, sort
    assert 'data-sort="accelerators"' in page.text and 'data-sort="state"' not in page.text  # state: no index


def test_the_job_list_says_where_a_count_not_named_by_alloc_tres_came_from(member_client, cluster):
    """a job given whole nodes says so; one whose AllocTRES names its GPUs needs no note."""
    JobFactory(cluster=cluster, job_id="1", accelerators=16, accelerators_source="exclusive_node", partition="whole")
    JobFactory(cluster=cluster, job_id="2", accelerators=8, accelerators_source="alloc_tres")
    JobFactory(cluster=cluster, job_id="3", accelerators=0, accelerators_source="none")
    response = member_client.get("/jobs/", {"cluster": cluster.pk})
    assert response.status_code == 200
    assert response.text.count("whole nodes: an exclusive partition, no gres") == 1
    for source in ("exclusive_node", "alloc_tres", "none"):
        assert f'data-accelerators-source="{source}"' in response.text
