"""/api/v1/clusters/: create → 202 with a status URL, list, detail, delete → deleting, nodes."""

import pytest
from django.utils import timezone

from tenants.models import StaffRole
from tests.factories import ClusterFactory, ClusterNodeFactory, StaffRoleFactory
from workloads.models import Cluster, ClusterNode

pytestmark = pytest.mark.django_db


def payload(allocation, **overrides):
    body = {"allocation": allocation.pk, "name": "llm-pretrain", "kind": "hyperpod_slurm", "instance_count": 4}
    body.update(overrides)
    return body


def test_create_answers_202_with_the_cluster_and_its_status_url(
    member_api, org, allocation, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as callbacks:
        response = member_api.post("/api/v1/clusters/", payload(allocation), format="json")
    assert response.status_code == 202
    body = response.json()
    cluster = Cluster.objects.get()
    assert body["id"] == cluster.pk and body["status"] == "requested" and body["organization"] == org.slug
    assert body["status_url"] == f"http://testserver/api/v1/clusters/{cluster.pk}/"
    assert response["Location"] == body["status_url"]
    assert {(g["role"], g["instance_count"]) for g in body["groups"]} == {("controller", 1), ("worker", 4)}
    assert len(callbacks) == 1
    assert member_api.get(body["status_url"]).json()["status"] == "requested"


def test_create_over_the_allocation_is_400_with_the_limit(member_api, allocation):
    response = member_api.post("/api/v1/clusters/", payload(allocation, instance_count=20), format="json")
    assert response.status_code == 400
    assert "more than your allocation allows: 8" in response.json()["instance_count"][0]
    assert not Cluster.objects.exists()


def test_another_orgs_allocation_id_is_refused(member_api, allocation, other_allocation):
    response = member_api.post("/api/v1/clusters/", payload(other_allocation), format="json")
    assert response.status_code == 400
    assert response.json() == {"allocation": ["No active allocation of your organization has this id."]}
    assert not Cluster.objects.exists()


def test_bad_input_names_each_field(member_api, allocation):
    bad = {"allocation": allocation.pk, "name": "Bad Name", "instance_count": 0}
    response = member_api.post("/api/v1/clusters/", bad, format="json")
    assert response.status_code == 400
    assert set(response.json()) == {"name", "instance_count"}
    assert not Cluster.objects.exists()


@pytest.mark.parametrize(("gib", "accepted"), [(1200, True), (2400, True), (4800, True), (1800, False), (3600, False)])
def test_lustre_capacity_takes_the_sizes_fsx_offers(member_api, allocation, gib, accepted):
    body = payload(allocation, storage="fsx_lustre_new", s3_data_repository_path="s3://corpus/ja/")
    response = member_api.post("/api/v1/clusters/", {**body, "storage_capacity_gib": gib}, format="json")
    if accepted:
        assert response.status_code == 202, response.json()
    else:
        assert response.status_code == 400
        assert "1,200 GiB, 2,400 GiB or a multiple of 2,400 GiB" in response.json()["storage_capacity_gib"][0]
        assert not Cluster.objects.exists()


def test_list_is_scoped_to_the_callers_org(member_api, org, other_org):
    ClusterFactory(organization=org, name="mine")
    ClusterFactory(organization=other_org, name="theirs")
    names = [c["name"] for c in member_api.get("/api/v1/clusters/").json()["results"]]
    assert names == ["mine"]


def test_staff_list_every_org(api_client, manager, org, other_org):
    ClusterFactory(organization=org)
    ClusterFactory(organization=other_org)
    api_client.force_authenticate(manager)
    assert api_client.get("/api/v1/clusters/").json()["count"] == 2
    one = api_client.get("/api/v1/clusters/", {"organization": other_org.slug}).json()
    assert [c["organization"] for c in one["results"]] == [other_org.slug]


def test_a_tenant_cannot_filter_by_another_org(member_api, org, other_org):
    ClusterFactory(organization=other_org)
    response = member_api.get("/api/v1/clusters/", {"organization": other_org.slug})
    assert response.status_code == 400 and "organization" in response.json()


def test_instance_count_and_groups_together_are_refused(member_api, allocation):
    body = payload(allocation, groups=[{"instance_type": "p5.48xlarge", "count": 2}])
    response = member_api.post("/api/v1/clusters/", body, format="json")
    assert response.status_code == 400 and "not both" in response.json()["groups"][0]
    assert not Cluster.objects.exists()


def test_delete_answers_202_and_the_cluster_is_deleting(member_api, org):
    cluster = ClusterFactory(organization=org)
    response = member_api.delete(f"/api/v1/clusters/{cluster.pk}/")
    assert response.status_code == 202
    assert response.json()["status"] == "deleting"
    again = member_api.delete(f"/api/v1/clusters/{cluster.pk}/")
    assert again.status_code == 400 and "cannot be deleted" in again.json()["non_field_errors"][0]


def test_nodes_are_listed_with_pagination(member_api, org):
    cluster = ClusterFactory(organization=org)
    now = timezone.now()
    for n in range(3):
        ClusterNode.objects.create(
            organization=org,
            cluster=cluster,
            instance_id=f"i-{n}",
            group_name="workers",
            instance_type="p5.48xlarge",
            status="Running",
            launch_time=now,
            first_seen_at=now,
            last_seen_at=now,
            hostname=f"ip-10-1-0-{n}" if n else "",
        )
    body = member_api.get(f"/api/v1/clusters/{cluster.pk}/nodes/").json()
    assert body["count"] == 3
    assert [n["instance_id"] for n in body["results"]] == ["i-0", "i-1", "i-2"]
    # The name Slurm and the exporter use; null while the cloud has given none.
    assert [n["hostname"] for n in body["results"]] == [None, "ip-10-1-0-1", "ip-10-1-0-2"]


def test_nodes_give_the_neuron_utilization_a_post_kept(member_api, org, catalog):
    from pathlib import Path

    cluster = ClusterFactory(organization=org)
    node = ClusterNodeFactory(cluster=cluster, instance_id="i-09db9b55e0095612f", instance_type="trn1n.32xlarge")
    listed = member_api.get(f"/api/v1/clusters/{cluster.pk}/nodes/").json()["results"][0]
    assert (listed["accelerator_utilization"], listed["accelerator_read_at"]) == (None, None)
    scrape = Path(__file__).parent.parent / "samples" / "neuron_monitor_prometheus_trn1n.txt"
    posted = member_api.post(f"/api/v1/clusters/{cluster.pk}/health/ingest/", {"metrics": scrape.read_text()},
                             format="json")  # fmt: skip
    assert posted.status_code == 200, posted.json()
    listed = member_api.get(f"/api/v1/clusters/{cluster.pk}/nodes/").json()["results"][0]
    assert listed["instance_id"] == node.instance_id
    assert listed["accelerator_utilization"] == pytest.approx(0.1 / 32)  # one core of 32 at 10 %
    assert listed["accelerator_read_at"] is not None


def test_schema_documents_the_node_host_name(client):
    schema = client.get("/api/schema/?format=json").json()["components"]["schemas"]["ClusterNode"]
    hostname = schema["properties"]["hostname"]
    assert hostname["type"] == "string" and hostname.get("nullable") is True and hostname["readOnly"] is True
    utilization = schema["properties"]["accelerator_utilization"]
    assert utilization["type"] == "number" and utilization.get("nullable") is True and utilization["readOnly"] is True


def test_support_engineer_cannot_create_or_delete(api_client, org, allocation):
    api_client.force_authenticate(StaffRoleFactory(role=StaffRole.Role.SUPPORT_ENGINEER).user)
    cluster = ClusterFactory(organization=org)
    assert api_client.get(f"/api/v1/clusters/{cluster.pk}/").status_code == 200
    response = api_client.post("/api/v1/clusters/", payload(allocation, organization=org.slug), format="json")
    assert response.status_code == 403
    assert api_client.delete(f"/api/v1/clusters/{cluster.pk}/").status_code == 403
    assert Cluster.objects.count() == 1


def test_program_manager_creates_for_a_named_org(api_client, manager, org, allocation):
    api_client.force_authenticate(manager)
    response = api_client.post("/api/v1/clusters/", payload(allocation, organization=org.slug), format="json")
    assert response.status_code == 202


def test_schema_documents_the_cluster_endpoints(client):
    paths = client.get("/api/schema/?format=json").json()["paths"]
    assert "/api/v1/clusters/" in paths and "/api/v1/clusters/{id}/nodes/" in paths
    assert "202" in paths["/api/v1/clusters/"]["post"]["responses"]


def test_list_issues_a_bounded_number_of_queries(member_api, org):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def count(clusters):
        for _ in range(clusters):
            ClusterFactory(organization=org)
        with CaptureQueriesContext(connection) as queries:
            assert member_api.get("/api/v1/clusters/").status_code == 200
        return len(queries)

    member_api.get("/api/v1/clusters/")  # the forced user object caches its staff-role lookup after this
    assert count(2) == count(40)
