"""The health pages: a cluster's board (nodes × GPUs), the program's incidents, the rules; who may see each, and a
bounded number of queries however many nodes and events there are."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from tests.factories import (
    ClusterFactory,
    ClusterNodeFactory,
    HealthEventFactory,
    NcclValidationFactory,
    SupportCaseFactory,
    instance_type,
)
from workloads.models import Cluster, HealthEvent, NcclBaseline, PrometheusSource

pytestmark = pytest.mark.django_db


@pytest.fixture
def cluster(org):
    cluster = ClusterFactory(organization=org, name="p5-train")
    now = timezone.now()
    for n in range(4):
        ClusterNodeFactory(cluster=cluster, instance_id=f"i-{n:04d}", hostname=f"ip-10-1-0-{n}", gpu_read_at=now)
    return cluster


def test_the_board_colours_each_gpu_by_its_worst_open_event(member_client, cluster):
    HealthEventFactory(cluster=cluster, instance_id="i-0001", gpu=3, code=79)
    HealthEventFactory(cluster=cluster, instance_id="i-0002", gpu=5, kind="power_violation", code=None,
                       severity="warning", message="GPU 5: capped by power 80% of the last 10 min")  # fmt: skip
    HealthEventFactory(cluster=cluster, instance_id="i-0003", gpu=0, resolved_at=timezone.now())
    response = member_client.get(f"/clusters/{cluster.pk}/health/")
    assert response.status_code == 200
    board = response.context["board"]
    cells = {(row["node"].instance_id, cell["gpu"]): cell for row in board["rows"] for cell in row["cells"]}
    assert len(cells) == 4 * 8
    assert (cells[("i-0001", 3)]["state"], cells[("i-0001", 3)]["text"]) == ("critical", "79")
    assert (cells[("i-0002", 5)]["state"], cells[("i-0002", 5)]["text"]) == ("warning", "W")
    assert cells[("i-0003", 0)]["state"] == "ok"  # resolved: normal again
    rows = {row["node"].instance_id: row["state"] for row in board["rows"]}
    assert rows == {"i-0000": "ok", "i-0001": "critical", "i-0002": "warning", "i-0003": "ok"}  # a node: its worst GPU
    assert 'class="cell state-critical"' in response.text and "GPU has fallen off the bus" in response.text


def test_a_node_never_read_is_unknown_not_healthy(member_client, org):
    cluster = ClusterFactory(organization=org)
    ClusterNodeFactory(cluster=cluster, gpu_read_at=None)
    response = member_client.get(f"/clusters/{cluster.pk}/health/")
    assert {cell["state"] for cell in response.context["board"]["rows"][0]["cells"]} == {"unknown"}


def test_a_trainium_node_shows_its_16_neuron_devices_and_how_busy_its_cores_are(member_client, org):
    from tests.factories import ActiveAllocationFactory

    allocation = ActiveAllocationFactory(organization=org, pool__instance_type=instance_type("trn1.32xlarge"))
    cluster = ClusterFactory(organization=org, allocation=allocation)
    ClusterNodeFactory(cluster=cluster, instance_id="i-trn", instance_type="trn1.32xlarge",
                       gpu_read_at=timezone.now(), accelerator_utilization=0.25)  # fmt: skip
    HealthEventFactory(cluster=cluster, instance_id="i-trn", gpu=7, kind="neuron_ecc_uncorrected", code=None,
                       message="Neuron device 7: 864 uncorrected ECC errors (SRAM)")  # fmt: skip
    response = member_client.get(f"/clusters/{cluster.pk}/health/")
    row = response.context["board"]["rows"][0]
    assert row["gpus"] == 16 and len(row["cells"]) == 16
    assert (row["cells"][7]["state"], row["cells"][7]["text"]) == ("critical", "ECC")
    assert {cell["state"] for n, cell in enumerate(row["cells"]) if n != 7} == {"ok"}
    assert "NeuronCores busy: 25%" in response.text and "no accelerator exporter" not in response.text
    # Said as what they are: Neuron devices, not GPUs, in both languages.
    assert response.context["board"]["accelerators"] == "neuron"
    assert "Nodes × Neuron devices" in response.text and "Accelerator health" in response.text
    assert "GPU health" not in response.text and "Nodes × GPUs" not in response.text
    assert 'title="Neuron device 7: Neuron device 7: 864' in response.text
    member_client.cookies["django_language"] = "ja"
    japanese = member_client.get(f"/clusters/{cluster.pk}/health/", HTTP_ACCEPT_LANGUAGE="ja").text
    assert "ノード × Neuron デバイス" in japanese and "アクセラレーターの健全性" in japanese
    assert "GPU の健全性" not in japanese


def test_a_gpu_cluster_keeps_saying_gpus(member_client, cluster):
    response = member_client.get(f"/clusters/{cluster.pk}/health/")
    assert response.context["board"]["accelerators"] == "gpu"
    assert "Nodes × GPUs" in response.text and "GPU health" in response.text and "Neuron device" not in response.text


def test_the_board_refreshes_as_an_htmx_fragment(member_client, cluster):
    response = member_client.get(f"/clusters/{cluster.pk}/health/", headers={"HX-Request": "true"})
    assert response.status_code == 200
    assert response.text.lstrip().startswith('<div id="health-board"')
    assert "<html" not in response.text


def test_the_board_of_32_nodes_takes_the_same_queries_as_of_4(member_client, org):
    def queries_for(nodes):
        cluster = ClusterFactory(organization=org)
        for n in range(nodes):
            node = ClusterNodeFactory(cluster=cluster)
            HealthEventFactory(cluster=cluster, instance_id=node.instance_id, gpu=n % 8)
        with CaptureQueriesContext(connection) as captured:
            assert member_client.get(f"/clusters/{cluster.pk}/health/").status_code == 200
        return len(captured)

    assert queries_for(32) == queries_for(4)


def test_another_orgs_board_is_404(member_client, other_org):
    assert member_client.get(f"/clusters/{ClusterFactory(organization=other_org).pk}/health/").status_code == 404


# --- Incidents and rules (staff) ------------------------------------------------------------------------------------


def test_incidents_list_open_critical_events_by_org_with_their_case(support_client, cluster, other_org):
    case = SupportCaseFactory(organization=cluster.organization, cluster=cluster)
    HealthEventFactory(cluster=cluster, instance_id="i-0001", case=case)
    HealthEventFactory(cluster=cluster, instance_id="i-0002", severity="warning")  # not an incident
    HealthEventFactory(cluster=cluster, instance_id="i-0003", resolved_at=timezone.now())  # over
    suspect = ClusterFactory(organization=other_org, name="their-p5", interconnect_suspect_since=timezone.now())
    NcclValidationFactory(cluster=suspect, verdict="suspect", peak_busbw_gbps=300.5)
    Cluster.objects.filter(pk=cluster.pk).update(last_report_at=timezone.now(), reporter_silent_since=timezone.now())
    response = support_client.get("/program/incidents/")
    assert response.status_code == 200
    events = list(response.context["page"].object_list)
    assert [e.instance_id for e in events] == ["i-0001"]
    assert f"/support/{case.pk}/" in response.text
    assert "their-p5" in response.text and "300.5" in response.text  # the suspect interconnect
    assert "p5-train" in response.context["silent"][0].name


def test_a_silent_reporter_counts_from_its_last_report(support_client, cluster):
    """silent since it was marked (3 intervals after its last report) read "silent for 5 minutes"
    while nothing had come for two hours."""
    now = timezone.now()
    Cluster.objects.filter(pk=cluster.pk).update(
        last_report_at=now - timedelta(hours=2), reporter_silent_since=now - timedelta(minutes=5)
    )
    for url in ("/program/incidents/", f"/clusters/{cluster.pk}/reporter/"):
        text = support_client.get(url).text
        assert "silent for 2\xa0hours" in text or "silent for 2&nbsp;hours" in text, url
        assert "5\xa0minutes" not in text and "5&nbsp;minutes" not in text, url


def test_incidents_filter_by_an_organization_picked_by_name(support_client, cluster, other_org):
    HealthEventFactory(cluster=cluster)
    HealthEventFactory(cluster=ClusterFactory(organization=other_org))
    response = support_client.get("/program/incidents/", {"organization": other_org.slug})
    assert [e.organization for e in response.context["page"].object_list] == [other_org]
    assert support_client.get("/program/incidents/", {"organization": "no-such-org"}).status_code == 400


def test_tenants_may_not_see_incidents_or_rules(member_client):
    assert member_client.get("/program/incidents/").status_code == 403
    assert member_client.get("/program/health-rules/").status_code == 403


def test_the_rules_page_shows_the_tables_staff_read(support_client):
    response = support_client.get("/program/health-rules/")
    assert response.status_code == 200
    for text in (
        "GPU has fallen off the bus",
        "DCGM_FI_DEV_ROW_REMAP_FAILURE",
        "S2",
        "487",
        "neuron_ecc_uncorrected",
        "trn1.32xlarge",
        "50.56",
    ):
        assert text in response.text
    assert "Save baseline" not in response.text  # support engineers read; program managers edit


def test_a_program_manager_adds_and_changes_a_baseline(manager_client, manager):
    data = {"instance_type": instance_type("p5.48xlarge").pk, "nodes": 16, "busbw_gbps": 470, "size_gib": 16,
            "min_fraction": "0.85", "source": "our 16-node run"}  # fmt: skip
    assert manager_client.post("/program/health-rules/", data).status_code == 302
    baseline = NcclBaseline.objects.get(nodes=16)
    assert (baseline.busbw_gbps, baseline.size_bytes, baseline.updated_by) == (470, 16 * 2**30, manager)
    manager_client.post("/program/health-rules/", {**data, "busbw_gbps": 480})
    assert NcclBaseline.objects.get(nodes=16).busbw_gbps == 480


def test_a_bad_baseline_shows_its_errors_and_changes_nothing(manager_client):
    before = list(NcclBaseline.objects.values())
    data = {"instance_type": "", "nodes": 0, "busbw_gbps": -1, "size_gib": 16, "min_fraction": "1.5"}
    response = manager_client.post("/program/health-rules/", data)
    assert response.status_code == 400
    for field in ("instance_type", "nodes", "busbw_gbps", "min_fraction"):
        assert response.context["form"].errors[field]
    assert list(NcclBaseline.objects.values()) == before


def test_a_support_engineer_cannot_post_a_baseline(support_client):
    data = {"instance_type": instance_type("p5.48xlarge").pk, "nodes": 4, "busbw_gbps": 1, "size_gib": 1,
            "min_fraction": "0.5"}  # fmt: skip
    support_client.post("/program/health-rules/", data)
    assert not NcclBaseline.objects.filter(nodes=4).exists()


def test_the_rules_page_shows_each_prometheus_source_and_what_it_could_not_match(support_client):
    PrometheusSource.objects.create(
        name="program AMP",
        url="https://aps.example/workspaces/ws-1",
        sigv4_region="us-east-1",
        last_error="The workspace answered 403: not authorized",
        unmatched_hosts=["ip-9-9-9-9"],
    )
    response = support_client.get("/program/health-rules/")
    assert "not authorized" in response.text and "ip-9-9-9-9" in response.text


def test_health_events_of_a_deleted_clusters_nodes_stay_readable(member_client, cluster):
    HealthEventFactory(cluster=cluster, instance_id="i-0001", resolved_at=timezone.now())
    cluster.nodes.all().delete()
    assert member_client.get(f"/clusters/{cluster.pk}/health/").status_code == 200
    assert HealthEvent.objects.count() == 1


def test_the_program_team_sets_up_a_prometheus_source_in_admin(client):
    from tests.factories import UserFactory

    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    data = {"name": "program AMP", "organization": "", "url": "https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-1",
            "sigv4_region": "us-east-1", "cluster_label": "cluster", "enabled": "on"}  # fmt: skip
    assert client.post("/admin/workloads/prometheussource/add/", data).status_code == 302
    assert PrometheusSource.objects.get().sigv4_region == "us-east-1"
    for model in ("job", "healthevent", "ncclvalidation", "ncclbaseline", "reportertoken", "prometheussource"):
        assert client.get(f"/admin/workloads/{model}/").status_code == 200, model
    assert client.get("/admin/workloads/job/add/").status_code == 403  # reports come from the clusters
