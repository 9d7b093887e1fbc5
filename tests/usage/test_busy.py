"""Busy accelerator-hours: jobs' accelerator-time on the org's nodes, in the rollups beside running and allocated,
never more than a node ran in any hour."""

from datetime import date, datetime, timedelta

import pytest
import time_machine
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from tenants.models import Allocation
from tests.factories import ClusterFactory, MembershipFactory
from tests.jobs.sacct_rows import HEADER, line
from tests.usage.conftest import allocate, jst, run
from workloads.jobs.busy import NodeRun, busy_time
from workloads.jobs.models import Job
from workloads.models import ClusterNode, ClusterUsageDay, UsageDay
from workloads.usage import rollups

pytestmark = pytest.mark.django_db

HOUR = 3_600_000_000  # µs
DAY = date(2027, 1, 5)
P5_TRES = "cpu=384,gres/gpu:h100=16,gres/gpu=16,node=2"


@pytest.fixture
def cluster(org_a, p5):
    allocation = allocate(org_a, p5, 4, date(2027, 1, 1), date(2027, 1, 31), status=Allocation.Status.ACTIVE)
    return ClusterFactory(organization=org_a, allocation=allocation)


def node(cluster, instance_id, hostname):
    return ClusterNode.objects.create(
        organization=cluster.organization,
        cluster=cluster,
        instance_id=instance_id,
        hostname=hostname,
        group_name="workers",
        instance_type="p5.48xlarge",
        status="Running",
        first_seen_at=jst(2027, 1, 1),
        last_seen_at=jst(2027, 1, 5, 23),
    )


def node_run(cluster, the_node, start, end):
    interval = run(cluster.organization, "p5.48xlarge", start, end, cluster=cluster, instance=the_node.instance_id)
    interval.node = the_node
    interval.save()
    return interval


def report(cluster, *lines, user=None):
    client = APIClient()
    client.force_authenticate(user or MembershipFactory(organization=cluster.organization).user)
    body = {"sacct": "\n".join([HEADER, *lines]) + "\n", "timezone": "Asia/Tokyo"}
    response = client.post(f"/api/v1/clusters/{cluster.pk}/jobs/ingest/", body, format="json")
    assert response.status_code == 200, response.json()
    return response


def rolled_up(cluster, day=DAY):
    with time_machine.travel(jst(2027, 1, 6, 9), tick=False):
        rollups.mark_days(cluster.organization_id, day, day)  # the runs were written here, not by a poll
        rollups.roll_up()
    return UsageDay.objects.get(organization=cluster.organization, day=day)


@pytest.fixture
def two_nodes(cluster):
    """Node 1 ran 10:00–14:00, node 2 10:00–12:30 (Tokyo, Jan 5)."""
    one, two = node(cluster, "i-0001", "ip-10-1-0-1.ec2.internal"), node(cluster, "i-0002", "ip-10-1-0-2")
    node_run(cluster, one, jst(2027, 1, 5, 10), jst(2027, 1, 5, 14))
    node_run(cluster, two, jst(2027, 1, 5, 10), jst(2027, 1, 5, 12, 30))
    return one, two


def test_a_job_counts_only_the_hours_its_nodes_ran(cluster, two_nodes):
    # 16 GPUs on both nodes from 09:00 to 15:00: 96 GPU-hours asked, but the nodes ran 4 h and 2.5 h.
    with time_machine.travel(jst(2027, 1, 6, 9), tick=False):
        report(cluster, line("7", start="2027-01-05T09:00:00", end="2027-01-05T15:00:00", elapsed="21600",
                             nnodes="2", nodelist="ip-10-1-0-[1-2]", tres=P5_TRES))  # fmt: skip
    assert Job.objects.get().accelerator_hours == 96
    day = rolled_up(cluster)
    assert day.running_microseconds == int(6.5 * HOUR)
    assert day.busy_accelerator_microseconds == int(6.5 * HOUR) * 8  # busy exactly where the nodes ran, no more


def test_two_jobs_on_one_node_in_the_same_hour_are_capped_at_its_gpus(cluster, two_nodes):
    with time_machine.travel(jst(2027, 1, 6, 9), tick=False):
        report(
            cluster,
            line("1", start="2027-01-05T10:00:00", end="2027-01-05T11:00:00", elapsed="3600", nodelist="ip-10-1-0-1"),
            line("2", start="2027-01-05T10:00:00", end="2027-01-05T11:00:00", elapsed="3600", nodelist="ip-10-1-0-1"),
        )
    assert rolled_up(cluster).busy_accelerator_microseconds == 8 * HOUR  # not 16: node 1 has 8 GPUs


def test_a_half_busy_node_counts_half(cluster, two_nodes):
    with time_machine.travel(jst(2027, 1, 6, 9), tick=False):
        report(cluster, line("1", start="2027-01-05T10:00:00", end="2027-01-05T12:00:00", elapsed="7200",
                             nodelist="ip-10-1-0-2", tres="gres/gpu=4"))  # fmt: skip
    day = rolled_up(cluster)
    assert day.busy_accelerator_microseconds == 4 * 2 * HOUR
    assert ClusterUsageDay.objects.get(cluster=cluster, day=DAY).busy_accelerator_microseconds == 4 * 2 * HOUR


def test_a_running_job_counts_to_its_last_report_not_to_now(cluster, two_nodes):
    with time_machine.travel(jst(2027, 1, 5, 11), tick=False):
        report(cluster, line("1", state="RUNNING", start="2027-01-05T10:00:00", end="Unknown", elapsed="3600",
                             nodelist="ip-10-1-0-1"))  # fmt: skip
    # The reporter says nothing more; by the rollup the next day the job still counts to 11:00 only.
    assert rolled_up(cluster).busy_accelerator_microseconds == 8 * HOUR


def test_slurm_names_reach_nodes_through_the_reporters_node_map(cluster, two_nodes):
    client = APIClient()
    client.force_authenticate(MembershipFactory(organization=cluster.organization).user)
    body = {
        "sacct": HEADER
        + "\n"
        + line("1", start="2027-01-05T10:00:00", end="2027-01-05T11:00:00", elapsed="3600", nodelist="queue1-st-p5-1")
        + "\n",  # fmt: skip
        "slurm_nodes": "queue1-st-p5-1|ip-10-1-0-1|10.1.0.1\n",
        "timezone": "Asia/Tokyo",
    }
    with time_machine.travel(jst(2027, 1, 6, 9), tick=False):
        assert client.post(f"/api/v1/clusters/{cluster.pk}/jobs/ingest/", body, format="json").status_code == 200
    assert rolled_up(cluster).busy_accelerator_microseconds == 8 * HOUR


def test_a_host_the_portal_does_not_know_counts_nothing(cluster, two_nodes):
    with time_machine.travel(jst(2027, 1, 6, 9), tick=False):
        report(cluster, line("1", start="2027-01-05T10:00:00", end="2027-01-05T11:00:00", elapsed="3600",
                             nodelist="ip-10-9-9-9"))  # fmt: skip
    assert rolled_up(cluster).busy_accelerator_microseconds == 0  # reported, so a figure: zero, not unknown


def test_an_organization_that_never_reported_has_no_busy_figure(cluster, two_nodes):
    assert rolled_up(cluster).busy_accelerator_microseconds is None


def test_a_reused_address_gives_each_hour_to_the_node_that_ran_in_it(cluster):
    old, new = node(cluster, "i-old", "ip-10-1-0-1"), node(cluster, "i-new", "ip-10-1-0-1")
    ClusterNode.objects.filter(pk=old.pk).update(gone_at=jst(2027, 1, 5, 11))
    node_run(cluster, old, jst(2027, 1, 5, 10), jst(2027, 1, 5, 11))
    node_run(cluster, new, jst(2027, 1, 5, 12), jst(2027, 1, 5, 13))
    with time_machine.travel(jst(2027, 1, 6, 9), tick=False):
        report(cluster, line("1", start="2027-01-05T10:00:00", end="2027-01-05T13:00:00", elapsed="10800",
                             nodelist="ip-10-1-0-1"))  # fmt: skip
    assert rolled_up(cluster).busy_accelerator_microseconds == 2 * 8 * HOUR  # 10–11 on the old, 12–13 on the new


def test_busy_hours_reach_the_usage_api(cluster, two_nodes, manager):
    with time_machine.travel(jst(2027, 1, 6, 9), tick=False):
        report(cluster, line("1", start="2027-01-05T10:00:00", end="2027-01-05T12:00:00", elapsed="7200",
                             nodelist="ip-10-1-0-1"))  # fmt: skip
        rollups.roll_up()
        client = APIClient()
        client.force_authenticate(manager)
        rows = client.get("/api/v1/usage/", {"start": "2027-01-05", "end": "2027-01-05"}).json()["results"]
    (row,) = [r for r in rows if r["organization"] == cluster.organization.slug]
    assert float(row["busy_accelerator_hours"]) == 16.0
    assert float(row["busy_accelerator_hours"]) <= float(row["running_accelerator_hours"])


# --- The invariant over random jobs and runs -----------------------------------------------------------------------


@st.composite
def disjoint_spans(draw):
    """A node's runs in a day: disjoint, as its run intervals always are (minutes from midnight)."""
    cuts = sorted(draw(st.lists(st.integers(0, 24 * 60), min_size=2, max_size=6, unique=True)))
    return [(a, b) for a, b in zip(cuts[::2], cuts[1::2], strict=False)]


@st.composite
def job_spans(draw):
    start = draw(st.integers(0, 24 * 60 - 1))
    return (start, draw(st.integers(start + 1, 24 * 60))), draw(st.integers(1, 16))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(runs=disjoint_spans(), jobs=st.lists(job_spans(), min_size=1, max_size=5))
def test_busy_never_exceeds_what_the_node_ran_in_any_hour(cluster, runs, jobs):
    """One node, random runs and jobs (some asking more GPUs than it has): in every hour of the day, busy is what
    the jobs asked, capped at what the node ran × its 8 GPUs — so never more than it ran."""
    Job.objects.all().delete()
    ClusterNode.objects.all().delete()
    the_node = node(cluster, "i-prop", "ip-10-2-0-1")
    midnight = jst(2027, 1, 5)

    def at(minute):
        return midnight + timedelta(minutes=minute)

    def overlap_us(a, b, window):
        return max(0, int((min(b, window[1]) - max(a, window[0])).total_seconds()) * 1_000_000)

    node_runs = [NodeRun(cluster.organization_id, cluster.pk, the_node.pk, 1, "p5.48xlarge", at(a), at(b))
                 for a, b in runs]  # fmt: skip
    for number, ((a, b), gpus) in enumerate(jobs):
        Job.objects.create(
            organization=cluster.organization, cluster=cluster, job_id=str(number), state="COMPLETED",
            started_at=at(a), ended_at=at(b), node_count=1, node_list="ip-10-2-0-1", accelerators=gpus,
            first_reported_at=at(b), last_reported_at=at(b),
        )  # fmt: skip
    for hour in range(24):
        window = (at(hour * 60), at(hour * 60 + 60))
        busy = sum(busy_time([cluster.organization_id], window, node_runs).by_pool.values())
        ran = sum(overlap_us(run.start, run.end, window) for run in node_runs)
        asked = sum(gpus * overlap_us(at(a), at(b), window) for (a, b), gpus in jobs)
        assert busy == min(asked, ran * 8)
        assert busy <= ran * 8


def test_busy_hours_show_on_the_org_page_and_in_its_csv(cluster, two_nodes, org_a):
    from django.test import Client

    client = Client()
    with time_machine.travel(jst(2027, 1, 6, 9), tick=False):
        client.force_login(MembershipFactory(organization=org_a).user)  # a session of that day
        report(cluster, line("1", start="2027-01-05T10:00:00", end="2027-01-05T12:00:00", elapsed="7200",
                             nodelist="ip-10-1-0-1"))  # fmt: skip
        rollups.roll_up()
        page = client.get(f"/orgs/{org_a.slug}/usage/", {"period": "range", "start": "2027-01-05", "end": "2027-01-05"})
        csv = client.get(f"/orgs/{org_a.slug}/usage/export.csv", {"period": "range", "start": "2027-01-05",
                                                                  "end": "2027-01-05"})  # fmt: skip
    assert page.status_code == 200, page.content[:500]
    busy = page.context["total"].busy_accelerators
    assert busy == 16 * HOUR
    assert "16.0 held by jobs (30.8% of running)" in page.text  # 16 of the 52 accelerator-hours the nodes ran
    header, row = csv.content.decode("utf-8-sig").splitlines()[:2]
    assert dict(zip(header.split(","), row.split(","), strict=True))["busy_accelerator_hours"] == "16.0000"


def test_a_replaced_static_node_keeps_its_past_busy_hours(cluster):
    """ParallelCluster: q-st-p5-1 ran on 10.1.0.1, then was replaced by a node at 10.1.0.9 under the same name;
    rebuilding the first day (a rate change, a full rebuild) still finds the job on the node it ran on."""
    old, new = node(cluster, "i-old", "ip-10-1-0-1"), node(cluster, "i-new", "ip-10-1-0-9")
    node_run(cluster, old, jst(2027, 1, 5, 10), jst(2027, 1, 5, 12))
    node_run(cluster, new, jst(2027, 1, 6, 10), jst(2027, 1, 6, 12))
    client = APIClient()
    client.force_authenticate(MembershipFactory(organization=cluster.organization).user)
    for day, address in ((5, "10.1.0.1"), (6, "10.1.0.9")):
        body = {
            "sacct": HEADER
            + "\n"
            + line(
                f"{day}",
                start=f"2027-01-0{day}T10:00:00",
                end=f"2027-01-0{day}T12:00:00",
                elapsed="7200",
                nodelist="q-st-p5-1",
            )
            + "\n",  # fmt: skip
            "slurm_nodes": f"q-st-p5-1|q-st-p5-1|{address}\n",
            "timezone": "Asia/Tokyo",
        }
        with time_machine.travel(jst(2027, 1, day, 13), tick=False):
            assert client.post(f"/api/v1/clusters/{cluster.pk}/jobs/ingest/", body, format="json").status_code == 200
    assert rolled_up(cluster).busy_accelerator_microseconds == 2 * 8 * HOUR  # Jan 5, rebuilt after the change


def test_days_before_the_first_report_covers_have_no_busy_figure(cluster, two_nodes):
    node_run(cluster, two_nodes[0], jst(2027, 1, 3, 10), jst(2027, 1, 3, 12))
    with time_machine.travel(jst(2027, 1, 6, 9), tick=False):
        report(cluster, line("1", start="2027-01-05T10:00:00", end="2027-01-05T11:00:00", elapsed="3600",
                             nodelist="ip-10-1-0-1"))  # fmt: skip
    assert rolled_up(cluster, day=date(2027, 1, 3)).busy_accelerator_microseconds is None  # before: not reported
    assert rolled_up(cluster).busy_accelerator_microseconds == 8 * HOUR


def test_hours_nest_in_the_days_of_a_zone_with_a_half_hour_offset(settings):
    from zoneinfo import ZoneInfo

    from django.utils import timezone

    from workloads.jobs.busy import hours

    settings.TIME_ZONE = "Asia/Kolkata"  # +05:30
    with timezone.override(ZoneInfo("Asia/Kolkata")):
        india = ZoneInfo("Asia/Kolkata")
        start = datetime(2027, 1, 5, 22, 45, tzinfo=india)
        parts = list(hours(start, start + timedelta(hours=2)))
        assert [timezone.localtime(hour).strftime("%d %H:%M") for hour, _part in parts] == ["05 22:00", "05 23:00",
                                                                                          "06 00:00"]  # fmt: skip
        assert sum(part for _hour, part in parts) == 2 * HOUR
