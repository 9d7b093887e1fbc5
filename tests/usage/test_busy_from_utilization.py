"""Busy accelerator-hours where the scheduler says nothing: a Trainium cluster that reports no jobs gets its busy
time from its NeuronCore utilization (the Neuron monitor's readings, posted or polled), capped by what its nodes ran;
a cluster whose scheduler reports jobs keeps the jobs' figure."""

from datetime import date, timedelta

import pytest
import time_machine
from rest_framework.test import APIClient

from tenants.models import Allocation
from tests.factories import ClusterFactory, MembershipFactory
from tests.jobs.sacct_rows import HEADER, line
from tests.usage.conftest import allocate, jst, run
from workloads.models import ClusterNode, ClusterUsageDay, UsageDay
from workloads.usage import rollups
from workloads.usage.definitions import GRAIN, to_grain
from workloads.usage.models import AcceleratorBusyHour

pytestmark = pytest.mark.django_db

HOUR = 3_600_000_000  # µs
DAY = date(2027, 1, 5)
INSTANCE = "i-0trn100000000001"


@pytest.fixture
def cluster(org_a, trn1):
    allocation = allocate(org_a, trn1, 2, date(2027, 1, 1), date(2027, 1, 31), status=Allocation.Status.ACTIVE)
    cluster = ClusterFactory(organization=org_a, allocation=allocation, name="trn1-eks")
    node = ClusterNode.objects.create(
        organization=org_a, cluster=cluster, instance_id=INSTANCE, hostname="ip-10-2-0-1.ec2.internal",
        group_name="workers", instance_type="trn1.32xlarge", status="Running", first_seen_at=jst(2027, 1, 1),
        last_seen_at=jst(2027, 1, 5, 23),
    )  # fmt: skip
    interval = run(org_a, "trn1.32xlarge", jst(2027, 1, 5, 10), jst(2027, 1, 5, 14), cluster=cluster,
                   instance=INSTANCE)  # fmt: skip
    interval.node = node
    interval.save()
    return cluster


def scrape(busy: float) -> str:
    """The Neuron exporter's utilization of all 32 NeuronCores of the node, each at `busy`."""
    lines = ["# TYPE neuroncore_utilization_ratio gauge"]
    lines += [f'neuroncore_utilization_ratio{{instance_id="{INSTANCE}",neuroncore="{c}"}} {busy}' for c in range(32)]
    return "\n".join(lines) + "\n"


def post(cluster, text, at):
    client = APIClient()
    client.force_authenticate(MembershipFactory(organization=cluster.organization).user)
    with time_machine.travel(at, tick=False):
        response = client.post(f"/api/v1/clusters/{cluster.pk}/health/ingest/", {"metrics": text}, format="json")
    assert response.status_code == 200, response.json()


def rolled_up(cluster):
    with time_machine.travel(jst(2027, 1, 6, 9), tick=False):
        rollups.mark_days(cluster.organization_id, DAY, DAY)
        rollups.roll_up()
    return UsageDay.objects.get(organization=cluster.organization, day=DAY)


def test_without_jobs_the_neuron_utilization_is_the_busy_time(cluster):
    assert rolled_up(cluster).busy_accelerator_microseconds is None  # nothing reported yet: "not reported"
    post(cluster, scrape(0.5), jst(2027, 1, 5, 11))  # the first reading: nothing before it to stand for
    post(cluster, scrape(0.5), jst(2027, 1, 5, 11, 10))  # 10 min at 50 % of 16 devices
    post(cluster, scrape(0.25), jst(2027, 1, 5, 11, 20))  # 10 min at 25 %
    expected = int(16 * 0.5 * HOUR / 6) + int(16 * 0.25 * HOUR / 6)  # 1.33 + 0.67 = 2 device-hours
    day = rolled_up(cluster)
    assert day.busy_accelerator_microseconds == pytest.approx(expected, abs=2)
    assert ClusterUsageDay.objects.get(cluster=cluster, day=DAY).busy_accelerator_microseconds == pytest.approx(
        expected, abs=2
    )


def test_a_reading_after_a_long_gap_stands_for_fifteen_minutes_at_most(cluster):
    post(cluster, scrape(1.0), jst(2027, 1, 5, 10))
    post(cluster, scrape(1.0), jst(2027, 1, 5, 13))  # three hours later: not three hours of busy time
    assert rolled_up(cluster).busy_accelerator_microseconds == 16 * HOUR // 4


def test_readings_split_over_program_hours_and_are_capped_by_what_the_node_ran(cluster):
    post(cluster, scrape(1.0), jst(2027, 1, 5, 13, 55))
    post(cluster, scrape(1.0), jst(2027, 1, 5, 14, 5))  # the node's run ended at 14:00
    hours = dict(AcceleratorBusyHour.objects.values_list("hour", "busy_accelerator_microseconds"))
    assert hours == {jst(2027, 1, 5, 13): 16 * HOUR // 12, jst(2027, 1, 5, 14): 16 * HOUR // 12}
    # 14:00–14:05 ran nothing; the daily row keeps its 1.3333 accelerator-hours on the grain (definitions)
    assert rolled_up(cluster).busy_accelerator_microseconds == to_grain(16 * HOUR // 12) == 13_333 * GRAIN


def test_a_cluster_whose_scheduler_reports_jobs_keeps_the_jobs_figure(cluster):
    post(cluster, scrape(1.0), jst(2027, 1, 5, 11))
    post(cluster, scrape(1.0), jst(2027, 1, 5, 11, 10))
    client = APIClient()
    client.force_authenticate(MembershipFactory(organization=cluster.organization).user)
    sacct = "\n".join([HEADER, line("1", start="2027-01-05T12:00:00", end="2027-01-05T13:00:00", elapsed="3600",
                                    nodelist="ip-10-2-0-1", tres="gres/neuron=4")]) + "\n"  # fmt: skip
    with time_machine.travel(jst(2027, 1, 6, 9), tick=False):
        answer = client.post(f"/api/v1/clusters/{cluster.pk}/jobs/ingest/", {"sacct": sacct, "timezone": "Asia/Tokyo"},
                             format="json")  # fmt: skip
    assert answer.status_code == 200, answer.json()
    assert rolled_up(cluster).busy_accelerator_microseconds == 4 * HOUR  # the job's, not the readings'


def test_a_refused_post_records_no_busy_time(cluster):
    post(cluster, scrape(0.5), jst(2027, 1, 5, 11))
    client = APIClient()
    client.force_authenticate(MembershipFactory(organization=cluster.organization).user)
    with time_machine.travel(jst(2027, 1, 5, 11, 10), tick=False):
        bad = client.post(f"/api/v1/clusters/{cluster.pk}/health/ingest/", {"metrics": scrape(1.5)}, format="json")
    assert bad.status_code == 400
    assert not AcceleratorBusyHour.objects.exists()
    assert ClusterNode.objects.get(instance_id=INSTANCE).gpu_read_at == jst(2027, 1, 5, 11)


def test_utilization_from_a_prometheus_poll_counts_too(cluster):
    from workloads.health.dcgm import parse_exposition, sample_pairs
    from workloads.health.models import PrometheusSource
    from workloads.health.polling import apply_source

    source = PrometheusSource.objects.create(name="program AMP", url="http://prometheus.example:9090")
    for minutes, busy in ((0, 0.5), (10, 0.5)):
        pairs = sample_pairs(parse_exposition(scrape(busy)).samples)
        apply_source(source, pairs, [], now=jst(2027, 1, 5, 12) + timedelta(minutes=minutes))
    assert rolled_up(cluster).busy_accelerator_microseconds == to_grain(16 * HOUR // 12)  # 16 × 0.5 × 10 min
