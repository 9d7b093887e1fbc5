"""neuron-monitor's own JSON report, posted on the same endpoint as exporter text: read into the same readings, with
the same bounds and the same all-or-nothing, from a real report of a trn1.2xlarge (tests/samples)."""

import json
from pathlib import Path

import pytest

from tenants.models import InstanceType
from tests.factories import ClusterFactory, ClusterNodeFactory
from workloads.health.models import HealthEvent
from workloads.health.neuron import report_pairs
from workloads.models import SupportCase
from workloads.telemetry_errors import ParseError

pytestmark = pytest.mark.django_db

SAMPLE = Path(__file__).parent.parent / "samples" / "neuron_monitor_report_trn1.json"
INSTANCE = "i-01db7a16f4c054239"  # the report's instance_info.instance_id


def report() -> dict:
    return json.loads(SAMPLE.read_text())


@pytest.fixture
def cluster(org, catalog):
    # The report's instance: a trn1.2xlarge, one Trainium device of two NeuronCores.
    InstanceType.objects.get_or_create(
        api_name="trn1.2xlarge",
        defaults={"accelerator": "Trainium 32 GB", "accelerators_per_instance": 1, "ranks_per_instance": 2,
                  "accelerator_memory_gib": 32, "peak_bf16_tflops": 190, "vcpus": 8, "memory_gib": 32,
                  "efa_gbps": 0},
    )  # fmt: skip
    cluster = ClusterFactory(organization=org, name="trn1-dev", cloud_name="fmp-1-trn1-dev")
    ClusterNodeFactory(cluster=cluster, instance_id=INSTANCE, instance_type="trn1.2xlarge",
                       hostname="ip-172-31-50-218.us-west-2.compute.internal")  # fmt: skip
    return cluster


def post(client, cluster, body: dict | str, **options):
    text = body if isinstance(body, str) else json.dumps(body)
    return client.post(f"/api/v1/clusters/{cluster.pk}/health/ingest/", {"metrics": text}, format="json", **options)


def test_the_real_report_reads_as_the_exporters_series():
    pairs = report_pairs(SAMPLE.read_text())
    names = sorted({labels["__name__"] for labels, _value in pairs})
    assert names == ["execution_errors_total", "hardware_ecc_events_total", "neuron_hardware_info",
                     "neuroncore_utilization_ratio"]  # fmt: skip
    assert all(labels["instance_id"] == INSTANCE for labels, _value in pairs)
    utilization = {labels["neuroncore"]: value for labels, value in pairs if "neuroncore" in labels}
    assert utilization == {"0": pytest.approx(0.013560819560861623), "1": 0.0}


def test_the_real_report_posted_keeps_utilization_and_opens_nothing(member_api, cluster):
    response = post(member_api, cluster, SAMPLE.read_text())
    assert response.status_code == 200, response.json()
    assert response.json() == {"readings": 0, "opened": 0, "resolved": 0, "nodes": 1}
    node = cluster.nodes.get()
    assert node.accelerator_utilization == pytest.approx(0.013560819560861623 / 2)  # core 1 idle
    assert node.gpu_read_at is not None


def test_the_report_as_a_text_body_is_read_too(member_api, cluster):
    response = member_api.post(
        f"/api/v1/clusters/{cluster.pk}/health/ingest/", SAMPLE.read_text(), content_type="text/plain"
    )
    assert response.status_code == 200, response.json()
    assert cluster.nodes.get().accelerator_utilization is not None


def test_an_uncorrected_ecc_error_in_the_report_is_critical_and_clears(member_api, cluster):
    bad = report()
    bad["system_data"]["neuron_hw_counters"]["neuron_devices"][0]["mem_ecc_uncorrected"] = 2
    assert post(member_api, cluster, bad).status_code == 200
    event = HealthEvent.objects.get()
    assert (event.kind, event.gpu, event.severity, event.action) == (
        "neuron_ecc_uncorrected", 0, "critical", "replace node",
    )  # fmt: skip
    assert event.message == "Neuron device 0: 2 uncorrected ECC errors (device memory)"
    assert SupportCase.objects.count() == 1
    assert post(member_api, cluster, SAMPLE.read_text()).json()["resolved"] == 1


def test_hardware_errors_and_a_short_driver_count_are_read(member_api, cluster):
    bad = report()
    bad["neuron_runtime_data"][0]["report"]["execution_stats"]["error_summary"]["hardware"] = 3
    bad["neuron_hardware_info"]["neuroncore_per_device_count"] = 1
    assert post(member_api, cluster, bad).status_code == 200
    kinds = set(HealthEvent.objects.values_list("kind", "severity"))
    assert kinds == {("neuron_hardware_errors", "warning"), ("neuron_cores_missing", "critical")}


def _set(body: dict, path: tuple, value) -> dict:
    target = body
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return body


DEVICE = ("system_data", "neuron_hw_counters", "neuron_devices", 0)
CORE = ("neuron_runtime_data", 0, "report", "neuroncore_counters", "neuroncores_in_use", "0")


@pytest.mark.parametrize(
    ("path", "value", "says"),
    [
        ((*DEVICE, "mem_ecc_uncorrected"), -1, "neuron_devices[0].mem_ecc_uncorrected is -1"),
        ((*DEVICE, "sram_ecc_corrected"), 1e30, "neuron_devices[0].sram_ecc_corrected is 1e+30"),
        ((*DEVICE, "mem_ecc_corrected"), 2.5, "neuron_devices[0].mem_ecc_corrected must be a whole number"),
        ((*DEVICE, "mem_ecc_corrected"), "7", "neuron_devices[0].mem_ecc_corrected must be a whole number"),
        ((*DEVICE, "neuron_device_index"), 1, "neuron_device_index 1: at most 0"),  # a trn1.2xlarge has one
        ((*CORE, "neuroncore_utilization"), 250.0, "neuroncores_in_use.0.neuroncore_utilization must be a percent"),
        (("neuron_hardware_info", "neuron_device_count"), 40, "neuron_device_count is 40"),
        (("instance_info", "instance_type"), "trn1.32xlarge", "comes from a trn1.32xlarge"),
        (("instance_info", "instance_id"), "i-0000000000000000f", "No node of this cluster"),
    ],
)
def test_impossible_values_are_a_400_naming_them_and_keep_nothing(member_api, cluster, path, value, says):
    response = post(member_api, cluster, _set(report(), path, value))
    assert response.status_code == 400
    assert says in json.dumps(response.json()), response.json()
    assert not HealthEvent.objects.exists()
    node = cluster.nodes.get()
    assert node.accelerator_utilization is None and node.gpu_read_at is None


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("{not json", "not a neuron-monitor JSON report"),
        ("[1, 2]", "a neuron-monitor report is a JSON object"),
        ('{"instance_info": {"instance_id": "i-01db7a16f4c054239"}}', "holds no Neuron readings"),
        ('{"neuron_hardware_info": {"neuron_device_count": 1}}', "instance_info.instance_id is missing"),
    ],
)
def test_what_is_no_report_is_a_400(member_api, cluster, text, says):
    response = post(member_api, cluster, text)
    assert response.status_code == 400 and says in json.dumps(response.json()), response.json()


def test_a_list_is_refused_by_the_parser():
    with pytest.raises(ParseError, match="is a JSON object"):
        report_pairs("[1, 2]")
