"""Trainium health from the Neuron monitor's Prometheus exporter, posted by a cluster or read from Prometheus: the
same board and events as DCGM on GPUs, from a real trn1n.32xlarge scrape."""

from pathlib import Path

import pytest
from django.utils import timezone

from tests.factories import ClusterFactory, ClusterNodeFactory
from workloads.health.dcgm import parse_exposition, sample_pairs
from workloads.health.models import HealthEvent, PrometheusSource
from workloads.health.neuron import classify, is_neuron
from workloads.health.polling import apply_source
from workloads.models import SupportCase

pytestmark = pytest.mark.django_db

SAMPLE = Path(__file__).parent.parent / "samples" / "neuron_monitor_prometheus_trn1n.txt"
INSTANCE = "i-09db9b55e0095612f"  # the sample's node
LABELS = f'instance_id="{INSTANCE}",instance_type="trn1n.32xlarge"'


@pytest.fixture
def cluster(org, catalog):
    cluster = ClusterFactory(organization=org, name="trn1-train", cloud_name="fmp-1-trn1-train")
    ClusterNodeFactory(cluster=cluster, instance_id=INSTANCE, instance_type="trn1n.32xlarge",
                       hostname="ip-10-2-0-1.ec2.internal")  # fmt: skip
    return cluster


def post(client, cluster, text):
    return client.post(f"/api/v1/clusters/{cluster.pk}/health/ingest/", {"metrics": text}, format="json")


def ecc(values: dict[tuple[int, str], int], devices: int = 16) -> str:
    """The exporter's ECC counters for every device: 0 unless `values` says otherwise."""
    lines = ["# TYPE hardware_ecc_events_total counter"]
    for device in range(devices):
        for event in ("mem_ecc_corrected", "mem_ecc_uncorrected", "sram_ecc_corrected", "sram_ecc_uncorrected"):
            value = values.get((device, event), 0)
            where = f'event_type="{event}",{LABELS},neuron_device_index="{device}"'
            lines.append(f"hardware_ecc_events_total{{{where}}} {float(value)}")
    return "\n".join(lines) + "\n"


def hardware_info(devices: int, per_device: int = 2) -> str:
    return (
        "# TYPE neuron_hardware_info gauge\n"
        f'neuron_hardware_info{{{LABELS},neuron_device_count="{devices}",neuroncore_per_device_count="{per_device}"}}'
        " 1.0\n"
    )


def test_the_real_scrape_is_read_as_neuron_and_its_utilization_kept(member_api, cluster):
    assert is_neuron(sample_pairs(parse_exposition(SAMPLE.read_text()).samples))
    response = post(member_api, cluster, SAMPLE.read_text())
    assert response.status_code == 200, response.json()
    # One NeuronCore in use at 10%, no ECC counters in this scrape: no fault, nothing to judge missing from.
    assert response.json() == {"readings": 0, "opened": 0, "resolved": 0, "nodes": 1}
    node = cluster.nodes.get()
    assert node.accelerator_utilization == pytest.approx(0.1 / 32)  # the other 31 cores are idle
    assert node.gpu_read_at is not None
    assert not HealthEvent.objects.exists()


def test_an_uncorrected_sram_error_is_critical_opens_a_case_and_clears(member_api, cluster):
    text = SAMPLE.read_text() + ecc({(7, "sram_ecc_uncorrected"): 864, (5, "mem_ecc_corrected"): 3})
    response = post(member_api, cluster, text)
    assert response.status_code == 200, response.json()
    events = {(e.kind, e.gpu): e for e in HealthEvent.objects.all()}
    assert set(events) == {("neuron_ecc_uncorrected", 7), ("neuron_ecc_corrected", 5)}
    critical = events[("neuron_ecc_uncorrected", 7)]
    assert critical.severity == "critical" and critical.action == "replace node"
    assert critical.message == "Neuron device 7: 864 uncorrected ECC errors (SRAM)"
    assert events[("neuron_ecc_corrected", 5)].severity == "warning"
    assert SupportCase.objects.count() == 1
    assert post(member_api, cluster, text).json()["opened"] == 0  # read again: nothing new
    assert post(member_api, cluster, SAMPLE.read_text() + ecc({})).json()["resolved"] == 2
    assert not HealthEvent.objects.filter(resolved_at=None).exists()


def test_a_device_missing_against_the_type_is_critical(member_api, cluster):
    response = post(member_api, cluster, SAMPLE.read_text() + ecc({}, devices=15))
    assert response.status_code == 200, response.json()
    event = HealthEvent.objects.get()
    assert (event.kind, event.gpu, event.severity) == ("neuron_device_missing", 15, "critical")
    assert event.message == "Neuron device 15 is not reporting (15 of 16 devices report)"


def test_the_drivers_device_and_core_counts_are_judged_against_the_type(member_api, cluster):
    assert post(member_api, cluster, SAMPLE.read_text() + hardware_info(16)).json()["opened"] == 0
    response = post(member_api, cluster, SAMPLE.read_text() + hardware_info(14))
    assert sorted(HealthEvent.objects.filter(resolved_at=None).values_list("gpu", flat=True)) == [14, 15]
    assert response.json()["opened"] == 2
    post(member_api, cluster, SAMPLE.read_text() + hardware_info(16, per_device=1))
    event = HealthEvent.objects.get(resolved_at=None)
    assert (event.kind, event.gpu, event.message) == ("neuron_cores_missing", None, "16 of 32 NeuronCores report")


def test_hardware_execution_errors_are_a_warning(member_api, cluster):
    generic = SAMPLE.read_text().splitlines(keepends=True)
    line = next(n for n, text in enumerate(generic) if text.startswith("execution_errors_total{"))
    generic[line] = generic[line].replace('error_type="generic"', 'error_type="hardware"').replace("} 0.0", "} 2.0")
    text = "".join(generic)
    assert post(member_api, cluster, text).status_code == 200
    event = HealthEvent.objects.get()
    assert (event.kind, event.severity, event.gpu) == ("neuron_hardware_errors", "warning", None)


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (ecc({(3, "mem_ecc_uncorrected"): -1}), "must be a count"),
        (ecc({(3, "mem_ecc_uncorrected"): 1e30}), "must be a count"),
        (ecc({}, devices=17), "neuron_device_index 16: at most 15"),
        (hardware_info(40), "neuron_device_count 40: at most 16"),
        (
            f'# TYPE neuroncore_utilization_ratio gauge\nneuroncore_utilization_ratio{{{LABELS},neuroncore="1"}} 1.5\n',
            "between 0 and 1",
        ),
        (
            "# TYPE neuroncore_utilization_ratio gauge\n"
            f'neuroncore_utilization_ratio{{{LABELS},neuroncore="32"}} 0.5\n',
            "neuroncore 32: at most 31",
        ),
    ],
)
def test_impossible_values_are_a_400_naming_them_and_keep_nothing(member_api, cluster, extra, says):
    text = (
        SAMPLE.read_text()
        .replace("# HELP neuroncore_utilization_ratio", "# HELP x")
        .replace("# TYPE neuroncore_utilization_ratio gauge\n", "")
    )
    text = text.replace("neuroncore_utilization_ratio{", "neuroncore_utilization_ratio_unused{")
    response = post(member_api, cluster, text + extra)
    assert response.status_code == 400
    assert says in response.json()["metrics"][0], response.json()
    assert not HealthEvent.objects.exists()
    assert cluster.nodes.get().accelerator_utilization is None


def test_neuron_series_from_prometheus_open_events(cluster):
    source = PrometheusSource.objects.create(name="program AMP", url="http://prometheus.example:9090")
    current = sample_pairs(parse_exposition(SAMPLE.read_text() + ecc({(2, "mem_ecc_uncorrected"): 1})).samples)
    outcome = apply_source(source, current, [], now=timezone.now())
    assert outcome.opened == 1 and outcome.unmatched_hosts == []
    event = HealthEvent.objects.get()
    assert (event.kind, event.gpu, event.source) == ("neuron_ecc_uncorrected", 2, "prometheus")
    assert cluster.nodes.get().accelerator_utilization == pytest.approx(0.1 / 32)


def test_classify_without_a_type_counts_only_the_cores_listed():
    pairs = [({"__name__": "neuroncore_utilization_ratio", "neuroncore": str(c), "instance_id": "i-1"}, 0.5)
             for c in range(4)]  # fmt: skip
    read = classify(pairs, expected=None)
    assert read.faults == () and read.utilization == 0.5


def test_a_real_prometheus_poll_reads_the_neuron_families(prometheus, cluster):
    from datetime import timedelta

    from workloads.health import polling

    at = timezone.now().replace(microsecond=0) - timedelta(hours=1)
    samples = [(at - timedelta(minutes=m), 0.0) for m in (10, 5, 0)]
    node = {"instance_id": INSTANCE, "instance_type": "trn1n.32xlarge"}
    series = [
        ("hardware_ecc_events_total", {**node, "neuron_device_index": str(d), "event_type": event},
         [(t, 2.0 if (d, event) == (4, "mem_ecc_uncorrected") and t == at else v) for t, v in samples])
        for d in range(15)  # device 15 gone
        for event in ("mem_ecc_corrected", "mem_ecc_uncorrected", "sram_ecc_corrected", "sram_ecc_uncorrected")
    ]  # fmt: skip
    series.append(("neuroncore_utilization_ratio", {**node, "neuroncore": "0"}, [(t, 0.64) for t, _v in samples]))
    server = prometheus(series)
    source = PrometheusSource.objects.create(name="program AMP", url=server.url)
    outcome = polling.poll_source(source, now=at)
    assert outcome.unmatched_hosts == [] and outcome.opened == 2
    events = set(HealthEvent.objects.values_list("kind", "gpu", "source"))
    assert events == {("neuron_ecc_uncorrected", 4, "prometheus"), ("neuron_device_missing", 15, "prometheus")}
    assert cluster.nodes.get().accelerator_utilization == pytest.approx(0.64 / 32)


def test_a_trainium_node_whose_neuron_monitor_goes_silent_is_a_warning(cluster):
    quiet = ClusterNodeFactory(cluster=cluster, instance_id="i-0quiet0000000001", instance_type="trn1n.32xlarge",
                               hostname="ip-10-2-0-2.ec2.internal")  # fmt: skip
    source = PrometheusSource.objects.create(name="program AMP", url="http://prometheus.example:9090")
    current = sample_pairs(parse_exposition(SAMPLE.read_text() + ecc({})).samples)
    outcome = apply_source(source, current, [], now=timezone.now())
    assert outcome.opened == 1
    event = HealthEvent.objects.get()
    assert (event.kind, event.instance_id, event.severity) == ("exporter_silent", quiet.instance_id, "warning")
    assert event.message == (
        "The Neuron monitor on ip-10-2-0-2.ec2.internal sent nothing while the cluster's other nodes did."
    )
    assert event.get_kind_display() == "Accelerator exporter not reporting"  # a Trainium node has no GPU exporter
    assert not SupportCase.objects.exists()  # a warning: the board shows it, no case
    # It reports again: the warning is resolved.
    both = current + [({**labels, "instance_id": quiet.instance_id}, value) for labels, value in current]
    assert apply_source(source, both, [], now=timezone.now()).resolved == 1
    assert not HealthEvent.objects.filter(resolved_at=None).exists()
