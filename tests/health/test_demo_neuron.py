"""The demo's Trainium clusters post Neuron monitor readings as its P5 clusters post DCGM's: their health board is
read (normal, one warning), never all grey."""

import pytest
from django.utils import timezone

from tests.factories import ActiveAllocationFactory, ClusterFactory, ClusterNodeFactory, instance_type
from workloads.health.models import HealthEvent
from workloads.management.commands.load_demo_telemetry import Command

pytestmark = pytest.mark.django_db


def test_the_demo_trn1_cluster_reports_neuron_readings(member_client, org, catalog):
    allocation = ActiveAllocationFactory(organization=org, pool__instance_type=instance_type("trn1.32xlarge"))
    cluster = ClusterFactory(organization=org, allocation=allocation, name="trn1-pretrain")
    for n in range(3):
        ClusterNodeFactory(cluster=cluster, instance_id=f"i-0trn{n:012d}", instance_type="trn1.32xlarge",
                           gpu_read_at=None)  # fmt: skip
    Command().report_neuron(cluster)
    nodes = list(cluster.nodes.order_by("pk"))
    assert all(node.gpu_read_at is not None for node in nodes)
    assert [round(node.accelerator_utilization, 4) for node in nodes] == [0.905, 0.865, 0.825]
    event = HealthEvent.objects.get()
    assert (event.kind, event.instance_id, event.gpu, event.severity) == (
        "neuron_ecc_corrected", nodes[1].instance_id, 5, "warning",
    )  # fmt: skip
    board = member_client.get(f"/clusters/{cluster.pk}/health/").context["board"]
    states = {cell["state"] for row in board["rows"] for cell in row["cells"]}
    assert states == {"ok", "warning"} and board["accelerators"] == "neuron"
    assert timezone.now() >= nodes[0].gpu_read_at
