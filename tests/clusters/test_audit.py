"""The audit trail records cluster creation, deletion and retries (who, when, which allocation) beside the capacity
decisions, links each to its cluster, and is filtered by an organization picked by name, like the allocations page."""

import pytest

from tenants.models import AuditEvent
from tests.clusters.test_services import create
from tests.factories import OrganizationFactory
from workloads.clusters.lifecycle import transition
from workloads.clusters.services import request_delete, retry_cluster

pytestmark = pytest.mark.django_db


def test_creating_retrying_and_deleting_a_cluster_are_audited(org, allocation, actor, manager_client):
    cluster = create(org, allocation, actor, count=4)
    transition(cluster_id=cluster.pk, to="failed", message="CreateCluster: capacity")
    cluster.refresh_from_db()
    retry_cluster(cluster=cluster, actor=actor)
    cluster.refresh_from_db()
    request_delete(cluster=cluster, actor=actor)
    events = list(AuditEvent.objects.filter(target_type="cluster", target_id=cluster.pk).order_by("pk"))
    assert [(e.action, e.actor, e.organization) for e in events] == [
        ("cluster.created", actor, org),
        ("cluster.retried", actor, org),
        ("cluster.deletion_requested", actor, org),
    ]
    assert events[0].changes == {"allocation": [None, f"A-{allocation.pk}"], "workers": [None, "4 × p5.48xlarge"]}
    assert events[1].changes["attempt"] == [1, 2]
    page = manager_client.get("/program/audit/")
    assert "created the cluster" in page.text and "asked to delete the cluster" in page.text
    assert f'href="/clusters/{cluster.pk}/"' in page.text  # the event links the cluster's page
    assert "Workers: — → 4 × p5.48xlarge" in page.text  # its details named, not by their stored keys
    assert "workers:" not in page.text


def test_the_audit_and_allocations_pages_pick_an_organization_by_name(org, allocation, actor, manager_client):
    create(org, allocation, actor)
    other = OrganizationFactory(name="Zeta Lab")
    for path in ("/program/audit/", "/program/capacity/allocations/"):
        page = manager_client.get(path)
        assert 'id="org-filter" name="org"' in page.text, path  # a search field, not a menu of every organization
        assert "<option" not in page.text.split('id="org-filter"')[1].split("</datalist>")[0], path
    suggested = manager_client.get("/organizations/suggest/", {"org": "zeta"}).text
    assert f'value="{other.slug}"' in suggested and "Zeta Lab" in suggested and org.slug not in suggested
    assert manager_client.get("/program/audit/", {"org": other.slug}).context["page"].paginator.count == 0
    assert manager_client.get("/program/audit/", {"org": "Zeta Lab"}).context["page"].paginator.count == 0
    assert manager_client.get("/program/audit/", {"org": org.slug}).context["page"].paginator.count >= 1
    assert manager_client.get("/program/audit/", {"org": org.name.upper()}).context["page"].paginator.count >= 1
