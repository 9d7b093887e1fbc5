"""POST /api/v1/clusters/{id}/jobs/ingest/: a cluster's sacct table in, one row per (cluster, job id) out."""

from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from rest_framework.test import APIClient

from tests.factories import ActiveAllocationFactory, ClusterFactory, instance_type
from tests.jobs.sacct_rows import HEADER, line
from workloads.jobs.models import Job
from workloads.reporting.services import issue_token

pytestmark = pytest.mark.django_db


@pytest.fixture
def cluster(org):
    return ClusterFactory(organization=org)


@pytest.fixture
def reporter(cluster, member):
    """An API client holding the cluster's reporter token, as the head-node script does."""
    _token, key = issue_token(user=member, cluster=cluster, name="head node")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def url(cluster) -> str:
    return f"/api/v1/clusters/{cluster.pk}/jobs/ingest/"


def report(*lines: str) -> str:
    return "\n".join([HEADER, *lines]) + "\n"


def post(client, cluster, sacct: str, **fields):
    return client.post(url(cluster), {"sacct": sacct, "timezone": "UTC", **fields}, format="json")


TABLE = report(
    line("1001", state="COMPLETED"),
    line("1002", state="RUNNING", end="Unknown", elapsed="600"),
    line("1003_4", state="COMPLETED"),
    line("1003_5", state="FAILED"),
    line("1004+0", state="COMPLETED"),
    line("1004+1", state="COMPLETED"),
    line(
        "1005",
        state="PENDING",
        start="Unknown",
        end="Unknown",
        elapsed="0",
        nnodes="0",
        nodelist="None assigned",
        tres="",
    ),  # fmt: skip
)


def test_posting_the_same_report_twice_leaves_the_same_rows(reporter, cluster):
    first = post(reporter, cluster, TABLE)
    assert first.status_code == 200, first.json()
    assert first.json() == {"received": 7, "created": 7, "updated": 0, "unchanged": 0}
    rows = list(Job.objects.order_by("job_id").values())
    second = post(reporter, cluster, TABLE)
    assert second.json() == {"received": 7, "created": 0, "updated": 0, "unchanged": 7}
    again = list(Job.objects.order_by("job_id").values())
    assert [r["id"] for r in again] == [r["id"] for r in rows]
    ignore = {"last_reported_at"}  # the only thing a repeat moves: when the portal last heard of each job
    assert [{k: v for k, v in r.items() if k not in ignore} for r in again] == [
        {k: v for k, v in r.items() if k not in ignore} for r in rows
    ]


def test_array_and_heterogeneous_job_ids_are_distinct_jobs(reporter, cluster):
    post(reporter, cluster, TABLE)
    assert set(Job.objects.values_list("job_id", flat=True)) == {
        "1001", "1002", "1003_4", "1003_5", "1004+0", "1004+1", "1005"
    }  # fmt: skip


def test_typed_and_untyped_gpu_entries_are_not_counted_twice(reporter, cluster):
    tres = "billing=384,cpu=384,gres/gpu:h100=16,gres/gpu=16,mem=4000G,node=2"
    post(reporter, cluster, report(line("2001", nnodes="2", nodelist="ip-10-1-0-[1-2]", tres=tres)))
    job = Job.objects.get(job_id="2001")
    assert (job.accelerators, job.accelerator_kind, job.accelerator_type) == (16, "gpu", "h100")
    assert job.accelerator_hours == pytest.approx(16 * 2)  # two hours on 16 GPUs


EXCLUSIVE_TRN1 = "PartitionName=trn1 AllowGroups=ALL Nodes=trn-[1-4] OverSubscribe=EXCLUSIVE State=UP\n"


def test_trainium_without_gres_on_an_exclusive_partition_counts_sixteen_per_node(org, member):
    allocation = ActiveAllocationFactory(organization=org, pool__instance_type=instance_type("trn1.32xlarge"))
    cluster = ClusterFactory(organization=org, allocation=allocation, workers=4)
    client = APIClient()
    client.force_authenticate(member)
    row = line("3001", partition="trn1", nnodes="4", nodelist="trn-[1-4]", tres="cpu=512,mem=2000G,node=4")
    assert post(client, cluster, report(row), slurm_partitions=EXCLUSIVE_TRN1).status_code == 200
    job = Job.objects.get(job_id="3001")
    assert (job.accelerators, job.accelerators_source) == (64, "exclusive_node")
    cluster.refresh_from_db()
    assert cluster.slurm_exclusive_partitions == ["trn1"]
    # A later report without the partitions keeps what the last one said; one saying none shares the nodes again.
    post(client, cluster, report(row.replace("3001", "3002", 1)))
    assert Job.objects.get(job_id="3002").accelerators_source == "exclusive_node"
    post(client, cluster, report(row), slurm_partitions="PartitionName=trn1 OverSubscribe=NO\n")
    assert Job.objects.get(job_id="3001").accelerators == 0


def test_a_cpu_only_job_on_a_gpu_cluster_holds_no_gpus(reporter, cluster, member):
    """The issue's 3-node CPU-only job showed 24 GPUs."""
    cpu_only = line("3101", nnodes="2", nodelist="ip-10-1-0-[1-2]", tres="billing=192,cpu=192,mem=64G,node=2")
    assert post(reporter, cluster, report(cpu_only)).status_code == 200
    job = Job.objects.get(job_id="3101")
    assert (job.accelerators, job.accelerators_source, job.accelerator_hours) == (0, "none", 0)
    client = APIClient()
    client.force_authenticate(member)
    body = client.get(f"/api/v1/jobs/{job.pk}/").json()
    assert (body["accelerators"], body["accelerators_source"]) == (0, "none")


def test_a_bad_partition_table_is_a_400_on_its_field(reporter, cluster):
    response = post(reporter, cluster, report(line("1")), slurm_partitions="No partitions in the system")
    assert response.status_code == 400 and "line 1" in response.json()["slurm_partitions"][0]
    assert not Job.objects.exists()


@pytest.mark.parametrize(
    ("row", "named"),
    [
        (line("4001", start="2026-11-20T10:00:00", end="2026-11-20T09:00:00"), "job 4001: End"),
        (line("4002", nnodes="5000", nodelist="ip-10-1-0-[1-5000]"), "job 4002: NNodes 5,000 is more than"),
        (
            line("4003", tres="cpu=192,gres/gpu=100000,node=1"),
            "job 4003: AllocTRES gives 100,000 accelerators; 1 node(s) of this cluster hold at most 8",
        ),
        (line("4004", state="RUNNING", start="2030-01-01T00:00:00", end="Unknown"), "job 4004: Start 2030-01-01"),
        (
            line("4005", state="PENDING", submit="2030-01-01T00:00:00", start="Unknown", end="Unknown", tres=""),
            "job 4005: Submit 2030",
        ),
    ],
)
def test_a_row_the_cluster_cannot_have_run_refuses_the_whole_report(reporter, cluster, row, named):
    response = post(reporter, cluster, report(line("1"), row))
    assert response.status_code == 400
    assert "line 3: " + named in response.json()["sacct"][0]
    assert not Job.objects.exists()
    cluster.refresh_from_db()
    assert cluster.last_report_at is None


def test_the_bounds_are_the_clusters_own(reporter, cluster):
    """Nodes: its groups, every node it listed, its allocation; times: now plus a few minutes of clock skew."""
    with time_machine.travel(datetime(2026, 11, 20, 11, 0, tzinfo=UTC), tick=False):
        soon = line("5001", state="RUNNING", start="2026-11-20T11:05:00", end="Unknown", elapsed="0")
        assert post(reporter, cluster, report(soon)).status_code == 200  # a head node's clock a little ahead
        later = line("5002", state="RUNNING", start="2026-11-20T11:30:00", end="Unknown", elapsed="0")
        assert post(reporter, cluster, report(later)).status_code == 400
    type(cluster.allocation).objects.filter(pk=cluster.allocation_id).update(instance_count=2)
    two = line("5003", nnodes="2", nodelist="ip-10-1-0-[1-2]", tres="cpu=384,gres/gpu=16,node=2")
    assert post(reporter, cluster, report(two)).status_code == 200  # two workers, 8 GPUs each
    three = line("5004", nnodes="3", nodelist="ip-10-1-0-[1-3]", tres="cpu=384,gres/gpu=24,node=3")
    assert post(reporter, cluster, report(three)).status_code == 400
    cluster.groups.update(instance_count=3)
    assert post(reporter, cluster, report(three)).status_code == 200
    # A pending job only asks: it may wait for more nodes than there are (Slurm's PartitionNodeLimit).
    asks = line("5005", state="PENDING", start="Unknown", end="Unknown", elapsed="0", nnodes="64",
                nodelist="None assigned", tres="")  # fmt: skip
    assert post(reporter, cluster, report(asks)).status_code == 200


def test_a_later_report_updates_the_job_in_place(reporter, cluster):
    post(reporter, cluster, report(line("1002", state="RUNNING", end="Unknown", elapsed="600")))
    response = post(reporter, cluster, report(line("1002", state="CANCELLED by 1000", end="2026-11-20T10:00:00")))
    assert response.json()["updated"] == 1
    job = Job.objects.get(job_id="1002")
    assert (job.state, job.cancelled_by_uid) == ("CANCELLED", 1000)
    assert job.ended_at == datetime(2026, 11, 20, 10, 0, tzinfo=UTC)
    assert Job.objects.count() == 1


def test_times_are_read_in_the_timezone_the_report_names(reporter, cluster):
    post(reporter, cluster, report(line("1")), timezone="Asia/Tokyo")
    assert Job.objects.get().started_at == datetime(2026, 11, 20, 0, 16, tzinfo=UTC)  # 09:16 in Tokyo


def test_the_report_may_be_posted_as_text_with_the_fields_in_the_query_string(reporter, cluster):
    response = reporter.post(
        url(cluster) + "?timezone=Asia/Tokyo&interval_seconds=600", TABLE, content_type="text/plain"
    )
    assert response.status_code == 200, response.json()
    assert response.json()["created"] == 7
    cluster.refresh_from_db()
    assert cluster.report_interval_seconds == 600
    assert cluster.last_report_at is not None


def test_a_bad_line_is_a_400_naming_it_and_nothing_is_kept(reporter, cluster):
    table = report(line("1"), line("2"), line("3", nnodes="two"))
    response = post(reporter, cluster, table)
    assert response.status_code == 400
    assert response.json() == {"sacct": ["line 4: NNodes must be a whole number, found 'two'"]}
    assert not Job.objects.exists()  # the two good lines before it are not kept either


@pytest.mark.parametrize(
    ("body", "field", "says"),
    [
        ({"sacct": report(line("1")), "timezone": "Mars/Olympus"}, "timezone", "not a time zone"),
        ({"sacct": report(line("1")), "interval_seconds": 5}, "interval_seconds", "greater than or equal to 30"),
        ({"sacct": report(line("1")), "slurm_nodes": "just-a-name\n"}, "slurm_nodes", "line 1: expected"),
        ({"sacct": report(line("1")), "sacc": "typo"}, "sacc", "Unknown field"),
        ({}, "sacct", "required"),
        ({"sacct": ["a", "b"]}, "sacct", "Not a valid string"),
    ],
)
def test_bad_fields_are_400s_naming_the_field(reporter, cluster, body, field, says):
    response = reporter.post(url(cluster), body, format="json")
    assert response.status_code == 400
    assert says in " ".join(response.json()[field])
    assert not Job.objects.exists()


@pytest.mark.parametrize(
    ("body", "content_type"),
    [(b"[1, 2]", "application/json"), (b"{not json", "application/json"), (b"\xff\xfe", "text/plain")],
)
def test_a_body_that_is_not_a_report_is_a_400(reporter, cluster, body, content_type):
    response = reporter.generic("POST", url(cluster), body, content_type=content_type)
    assert response.status_code == 400
    assert response.json()["detail"]


def test_a_body_over_twenty_megabytes_is_a_413_before_it_is_read(reporter, cluster):
    response = reporter.generic(
        "POST", url(cluster), b"x", content_type="text/plain", CONTENT_LENGTH=str(21 * 1024 * 1024)
    )
    assert response.status_code == 413
    assert "limit is 20 MB" in response.json()["detail"]


def test_a_real_twenty_one_megabyte_body_is_a_413_too(reporter, cluster):
    body = (line("1") + "\n").encode() * (21 * 1024 * 1024 // 120)
    response = reporter.generic("POST", url(cluster), body, content_type="text/plain")
    assert response.status_code == 413
    assert not Job.objects.exists()


def test_another_clusters_token_is_a_404(reporter, org):
    other = ClusterFactory(organization=org)  # the same organization, even
    response = post(reporter, other, report(line("1")))
    assert response.status_code == 404
    assert not Job.objects.exists()


def test_a_revoked_token_is_a_401_saying_so(cluster, member):
    from workloads.reporting.services import revoke_token

    token, key = issue_token(user=member, cluster=cluster, name="old")
    revoke_token(user=member, token=token)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    response = post(client, cluster, report(line("1")))
    assert response.status_code == 401
    assert "revoked" in response.json()["detail"]


def test_a_reporter_token_opens_nothing_but_its_ingest_endpoints(reporter, cluster):
    for path in ("/api/v1/clusters/", f"/api/v1/clusters/{cluster.pk}/", "/api/v1/jobs/", "/api/v1/organizations/"):
        response = reporter.get(path)
        assert response.status_code == 401, path


def test_no_credentials_is_a_401(cluster):
    assert post(APIClient(), cluster, report(line("1"))).status_code == 401


def test_another_orgs_member_gets_a_404(cluster, outsider):
    client = APIClient()
    client.force_authenticate(outsider)
    assert post(client, cluster, report(line("1"))).status_code == 404


def test_members_and_program_staff_may_post_with_their_own_credentials(cluster, member, support):
    for user in (member, support):
        client = APIClient()
        client.force_authenticate(user)
        assert post(client, cluster, report(line("1"))).status_code == 200


def test_a_deleted_cluster_takes_no_reports(reporter, cluster):
    cluster.status = cluster.Status.DELETED
    cluster.save()
    response = post(reporter, cluster, report(line("1")))
    assert response.status_code == 409
    assert "takes no reports" in response.json()["detail"]


def test_an_eks_cluster_takes_no_slurm_report(org, member):
    cluster = ClusterFactory(organization=org, kind="hyperpod_eks")
    client = APIClient()
    client.force_authenticate(member)
    response = post(client, cluster, report(line("1")))
    assert response.status_code == 400
    assert "EKS" in str(response.json())


def test_the_slurm_node_map_is_kept_for_the_cluster(reporter, cluster):
    sinfo = "p5-st-p5-1|ip-10-1-0-1|10.1.0.1\np5-st-p5-1|ip-10-1-0-1|10.1.0.1\np5-dy-p5-9|p5-dy-p5-9|p5-dy-p5-9\n"
    post(reporter, cluster, report(line("1")), slurm_nodes=sinfo)
    cluster.refresh_from_db()
    assert cluster.slurm_nodes == {"p5-st-p5-1": "10.1.0.1"}  # a node not placed yet maps to nothing


def test_the_token_records_its_last_use(reporter, cluster):
    post(reporter, cluster, report(line("1")))
    assert cluster.reporter_tokens.get().last_used_at is not None


# --- Reports no column, no worker and no rollup can take -------------------------------------------------------------


@pytest.mark.parametrize(
    ("row", "says"),
    [
        (line("1", nodelist="a[0-99999]b[0-99999]"), "more than 10,000 nodes"),  # ten billion names in 20 characters
        (line("1", nodelist="n[0-99999]"), "more than 10,000 nodes"),
        (line("1", elapsed=str(2**63)), "ElapsedRaw 9223372036854775808 is out of range"),
        (line("1", nnodes=str(2**40)), "NNodes 1099511627776 is out of range"),
        (line("1", state=f"CANCELLED by {2**40}"), "is out of range"),
        (line("1", tres=f"gres/gpu={2**40}"), "gres/gpu 1099511627776 is out of range"),
        (line("9" * 65), "JobID must look like"),
        (line("1", start="0001-01-02T00:00:00"), "is not a time a job of this program can have"),
        (line("1", end="9999-12-31T23:59:59"), "is not a time a job of this program can have"),
    ],
)
def test_values_beyond_any_real_job_are_400s_naming_the_line(reporter, cluster, row, says):
    response = post(reporter, cluster, report(row))
    assert response.status_code == 400
    assert response.json()["sacct"][0].startswith("line 2: ") and says in response.json()["sacct"][0]
    assert not Job.objects.exists()


def test_a_report_naming_too_many_nodes_in_all_is_refused_before_any_work(reporter, cluster):
    rows = [line(str(n), nnodes="10000", nodelist="n[1-10000]") for n in range(101)]  # 1,010,000 node names
    response = post(reporter, cluster, report(*rows))
    assert response.status_code == 400
    assert "more than 1,000,000" in response.json()["sacct"][0]


def test_an_empty_or_chunked_report_is_refused_not_taken_for_no_jobs(reporter, cluster):
    assert post(reporter, cluster, "  \n").status_code == 400
    chunked = reporter.generic(
        "POST", url(cluster), report(line("1")).encode(), content_type="text/plain", HTTP_TRANSFER_ENCODING="chunked"
    )
    assert chunked.status_code == 411
    cluster.refresh_from_db()
    assert cluster.last_report_at is None  # nothing was taken as a report


def test_json_nested_too_deeply_is_a_400(reporter, cluster):
    body = ("[" * 100_000 + "]" * 100_000).encode()
    response = reporter.generic("POST", url(cluster), b'{"sacct": ' + body + b"}", content_type="application/json")
    assert response.status_code == 400


def test_a_job_from_long_before_the_program_marks_only_the_programs_days(reporter, cluster):
    from workloads.usage.models import UsageDirtyDay

    first_pool_day = cluster.allocation.pool.starts_on
    with time_machine.travel(datetime.combine(first_pool_day, datetime.min.time(), UTC) + timedelta(days=10)):
        post(reporter, cluster, report(line("1", start="2001-01-01T00:00:00", end="2001-01-02T00:00:00")))
    days = sorted(UsageDirtyDay.objects.values_list("day", flat=True))
    assert days[0] == first_pool_day and len(days) <= 11  # not 26 years of days for the rollup to rebuild


def test_a_job_on_a_gone_node_stays_unknown_since_it_first_was(reporter, cluster):
    from tests.factories import ClusterNodeFactory

    ClusterNodeFactory(cluster=cluster, hostname="ip-10-1-0-1", gone_at=datetime(2026, 11, 1, tzinfo=UTC))
    running = line("7", state="RUNNING", end="Unknown", nodelist="ip-10-1-0-1")
    with time_machine.travel(datetime(2026, 11, 24, 3, tzinfo=UTC), tick=False):
        post(reporter, cluster, report(running))
    since = Job.objects.get().state_unknown_since
    with time_machine.travel(datetime(2026, 11, 24, 4, tzinfo=UTC), tick=False):
        assert post(reporter, cluster, report(running)).json()["unchanged"] == 1
    assert Job.objects.get().state_unknown_since == since


def test_slurm_names_keep_the_hosts_they_had_when_reported(reporter, cluster):
    post(reporter, cluster, report(line("1", nodelist="q-st-p5-1")), slurm_nodes="q-st-p5-1|ip-10-1-0-1|10.1.0.1\n")
    assert Job.objects.get().hosts == ["10.1.0.1"]
    post(reporter, cluster, report(line("2", nodelist="q-st-p5-1")), slurm_nodes="q-st-p5-1|ip-10-1-0-9|10.1.0.9\n")
    assert dict(Job.objects.values_list("job_id", "hosts")) == {"1": ["10.1.0.1"], "2": ["10.1.0.9"]}


def test_a_running_job_on_a_gone_node_counts_up_to_the_nodes_going(reporter, cluster, member):
    """the reporter still lists it RUNNING, but its node stopped at 12:00; its hours stop there."""
    from tests.factories import ClusterNodeFactory

    gone = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
    ClusterNodeFactory(cluster=cluster, hostname="ip-10-1-0-1", gone_at=gone)
    running = line("8", state="RUNNING", start="2026-11-20T10:00:00", end="Unknown", nodelist="ip-10-1-0-1")
    with time_machine.travel(datetime(2026, 11, 20, 18, 0, tzinfo=UTC), tick=False):
        assert post(reporter, cluster, report(running)).status_code == 200
    job = Job.objects.get()
    assert job.state_unknown_since == gone
    assert job.counted_until == gone and job.accelerator_hours == pytest.approx(8 * 2)  # not 8 × 8 hours
    client = APIClient()
    client.force_authenticate(member)
    assert client.get(f"/api/v1/jobs/{job.pk}/").json()["accelerator_hours"] == pytest.approx(16)
