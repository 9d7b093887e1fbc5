"""A support case names the cluster, and the node, it is about: in the form, the API and the
service, only within the case's organization; the cluster page links to its cases and opens one about a node."""

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from tests.factories import ClusterFactory, ClusterNodeFactory, SupportCaseFactory
from workloads.models import CaseEvent, SupportCase
from workloads.support import services

pytestmark = pytest.mark.django_db

CASE = {"title": "Xid 79 on one node", "description": "GPU fell off the bus", "category": "node_health"}


@pytest.fixture
def cluster(org):
    return ClusterFactory(organization=org, name="sakura-train")


@pytest.fixture
def node(cluster):
    return ClusterNodeFactory(cluster=cluster, instance_id="i-0aaa000000000001", hostname="ip-10-1-0-7")


@pytest.fixture
def other_cluster(other_org):
    return ClusterFactory(organization=other_org, name="kitsune-train")


def open_case(user, org, **links) -> SupportCase:
    return services.open_case(user=user, organization=org, **CASE, **links)


# --- The service -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("ref", ["i-0aaa000000000001", "ip-10-1-0-7", " ip-10-1-0-7 "])
def test_a_node_named_by_instance_id_or_host_name_brings_its_cluster(member, org, node, ref):
    case = open_case(member, org, node=ref)

    assert (case.cluster, case.node) == (node.cluster, node)


def test_a_node_is_looked_up_in_the_named_cluster(member, org, cluster, node):
    second = ClusterFactory(organization=org, name="sakura-eval")
    ClusterNodeFactory(cluster=second, hostname="ip-10-1-0-7")

    with pytest.raises(ValidationError) as error:
        open_case(member, org, node="ip-10-1-0-7")  # two clusters have that host name
    assert "name the cluster too" in error.value.message_dict["node"][0]
    assert open_case(member, org, cluster=cluster, node="ip-10-1-0-7").node == node


def test_a_host_name_means_the_node_still_there_over_ones_gone_with_old_clusters(member, org, cluster, node):
    from django.utils import timezone

    old = ClusterFactory(organization=org, name="sakura-v1", status="deleted")
    ClusterNodeFactory(cluster=old, hostname=node.hostname, gone_at=timezone.now())  # the same address, last month

    assert open_case(member, org, node=node.hostname).node == node


def test_an_unknown_node_is_a_field_error_that_names_it(member, org, cluster, node):
    with pytest.raises(ValidationError) as error:
        open_case(member, org, cluster=cluster, node="i-0ffffffffffffffff")
    assert error.value.message_dict == {
        "node": ["Cluster sakura-train has no node “i-0ffffffffffffffff” (an instance id or a host name)."]
    }
    assert not SupportCase.objects.exists()


def test_another_organizations_cluster_or_node_is_refused(member, org, other_cluster):
    foreign = ClusterNodeFactory(cluster=other_cluster)

    with pytest.raises(ValidationError) as error:
        open_case(member, org, cluster=other_cluster)
    assert "cluster" in error.value.message_dict
    with pytest.raises(ValidationError) as error:
        open_case(member, org, node=foreign.instance_id)  # looked up in the org's own clusters only
    assert "None of the organization's clusters" in error.value.message_dict["node"][0]


def test_relinking_records_one_event_and_a_new_cluster_drops_a_node_not_its_own(member, org, cluster, node):
    case = open_case(member, org, node=node.instance_id)
    second = ClusterFactory(organization=org, name="sakura-eval")

    services.update_case(user=member, case=case, cluster=second)
    case.refresh_from_db()
    assert (case.cluster, case.node) == (second, None)
    linked = case.events.filter(kind=CaseEvent.Kind.LINKED).get()
    assert (linked.old_value, linked.new_value) == ("sakura-train · i-0aaa000000000001", "sakura-eval")

    services.update_case(user=member, case=case, cluster=None, node="ip-10-1-0-7")
    case.refresh_from_db()
    assert (case.cluster, case.node) == (cluster, node)  # without a cluster, the node is found in any of the org's
    assert case.events.filter(kind=CaseEvent.Kind.LINKED).count() == 2


def test_a_node_named_alone_is_found_in_the_cases_cluster_first_then_brings_its_own(member, org, cluster, node):
    second = ClusterFactory(organization=org, name="sakura-eval")
    twin = ClusterNodeFactory(cluster=second, hostname=node.hostname)  # the same host name in both clusters
    case = open_case(member, org, cluster=second)

    services.update_case(user=member, case=case, node=node.hostname)
    case.refresh_from_db()
    assert (case.cluster, case.node) == (second, twin)  # the case's own cluster first

    services.update_case(user=member, case=case, node=node.instance_id)
    case.refresh_from_db()
    assert (case.cluster, case.node) == (cluster, node)  # found in another cluster of the org: brings it
    with pytest.raises(ValidationError) as error:
        services.update_case(user=member, case=case, cluster=second, node=node.instance_id)
    assert "Cluster sakura-eval has no node" in error.value.message_dict["node"][0]  # named together: only there


def test_a_node_without_a_cluster_cannot_be_stored(org, cluster, node):
    from django.db import IntegrityError, transaction

    with pytest.raises(IntegrityError), transaction.atomic():
        SupportCaseFactory(organization=org, cluster=None, node=node)


# --- Pages ------------------------------------------------------------------------------------------------------


def test_the_case_form_opens_a_case_about_a_node_from_the_cluster_page(member_client, org, cluster, node):
    page = member_client.get(reverse("clusters:detail", args=[cluster.pk]))
    create = reverse("support:create", args=[org.slug])
    link = f"{create}?cluster={cluster.pk}&amp;node={node.instance_id}"
    assert link.encode() in page.content  # each node row opens a case about it

    form = member_client.get(f"{create}?cluster={cluster.pk}&node={node.instance_id}")
    assert f'<option value="{cluster.pk}" selected>'.encode() in form.content
    assert f'value="{node.instance_id}"'.encode() in form.content

    response = member_client.post(
        create, {**CASE, "severity": "s2", "cluster": cluster.pk, "node": node.hostname}, follow=True
    )
    case = SupportCase.objects.get()
    assert (case.cluster, case.node) == (cluster, node)
    assert b'data-testid="case-cluster"' in response.content
    assert node.instance_id.encode() in response.content


def test_the_case_form_keeps_the_input_and_names_an_unknown_node(member_client, org, cluster, node):
    create = reverse("support:create", args=[org.slug])
    response = member_client.post(create, {**CASE, "severity": "s2", "cluster": cluster.pk, "node": "ip-9-9-9-9"})

    assert response.status_code == 400
    assert "Cluster sakura-train has no node “ip-9-9-9-9”" in response.content.decode()
    assert b'value="ip-9-9-9-9"' in response.content
    assert not SupportCase.objects.exists()


def test_reopening_a_closed_case_keeps_its_cluster_and_node(member_client, member, org, cluster, node):
    case = open_case(member, org, node=node.instance_id)
    services.update_case(user=member, case=case, status="closed")
    data = {"status": "open", "severity": case.severity, "workload": "", "cluster": cluster.pk}

    member_client.post(reverse("support:update", args=[case.pk]), {**data, "node": node.instance_id})
    case.refresh_from_db()
    assert (case.status, case.cluster, case.node) == ("open", cluster, node)


def test_the_case_page_changes_the_node(member_client, member, org, cluster, node):
    case = open_case(member, org, cluster=cluster)
    data = {"status": case.status, "severity": case.severity, "workload": "", "cluster": cluster.pk}

    member_client.post(reverse("support:update", args=[case.pk]), {**data, "node": "ip-10-1-0-7"})
    case.refresh_from_db()
    assert case.node == node


# --- API --------------------------------------------------------------------------------------------------------


def test_the_api_opens_and_relinks_a_case_by_cluster_id_and_node(member_api, org, cluster, node):
    created = member_api.post(
        "/api/v1/support-cases/", {**CASE, "organization": org.slug, "node": "ip-10-1-0-7"}, format="json"
    )
    assert created.status_code == 201, created.json()
    assert (created.json()["cluster"], created.json()["node"]) == (cluster.pk, node.instance_id)

    cleared = member_api.patch(f"/api/v1/support-cases/{created.json()['id']}/", {"node": None}, format="json")
    assert (cleared.status_code, cleared.json()["cluster"], cleared.json()["node"]) == (200, cluster.pk, None)


def test_the_api_answers_400_with_field_messages(member_api, org, cluster, other_cluster):
    url = "/api/v1/support-cases/"
    unknown = member_api.post(url, {**CASE, "organization": org.slug, "node": "i-0nope"}, format="json")
    assert unknown.status_code == 400
    assert "i-0nope" in unknown.json()["node"][0]

    foreign = member_api.post(url, {**CASE, "organization": org.slug, "cluster": other_cluster.pk}, format="json")
    assert foreign.status_code == 400
    assert "does not exist" in foreign.json()["cluster"][0]  # another org's cluster is an id that does not exist
    assert not SupportCase.objects.exists()
