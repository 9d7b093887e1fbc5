"""Revoking an allocation names what it deletes: the revoke page lists the clusters before a
manager confirms, the same ones the revocation deletes, and the organization's email names them in its language."""

import re

import pytest
from django.urls import reverse

from tenants.models import Allocation
from tests.factories import ActiveAllocationFactory, ClusterFactory, instance_type
from workloads.models import Cluster

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def reader(member):
    """A member of the organization, who gets its email."""
    return member


@pytest.fixture
def eight(org):
    return ActiveAllocationFactory(organization=org, instance_count=8, pool__instance_type=instance_type("p5.48xlarge"))


@pytest.fixture
def four_more(org, eight):
    return ActiveAllocationFactory(organization=org, instance_count=4, pool=eight.pool)


def named_on_page(response) -> list[str]:
    section = response.text.split('data-testid="doomed-clusters"')[1].split("</section>")[0]
    return re.findall(r'<a href="/clusters/\d+/">([^<]+)</a>', section)


def revoke_page(allocation) -> str:
    return reverse("allocation-revoke-page", args=[allocation.pk])


@pytest.fixture
def revoke(manager_client, django_capture_on_commit_callbacks):
    """A manager confirms the revocation; its email goes out as the transaction commits."""

    def post(allocation, reason: str):
        with django_capture_on_commit_callbacks(execute=True):
            return manager_client.post(revoke_page(allocation), {"reason": reason})

    return post


def test_the_page_names_the_clusters_the_revocation_deletes(manager_client, revoke, org, eight, four_more, mailoutbox):
    own = ClusterFactory(organization=org, allocation=four_more, name="on-the-allocation", workers=2)
    drawing = ClusterFactory(organization=org, allocation=eight, name="draws-on-both", workers=10)
    ClusterFactory(organization=org, allocation=eight, name="fits-anyway", workers=0)
    ClusterFactory(organization=org, allocation=four_more, name="already-gone", status="deleted")

    page = manager_client.get(revoke_page(four_more))
    assert page.status_code == 200
    assert named_on_page(page) == [own.name, drawing.name]  # 2 + 10 workers do not fit in the 8 left

    revoke(four_more, "Moved to the spring cycle.")
    deleting = set(Cluster.objects.filter(status=Cluster.Status.DELETING).values_list("name", flat=True))
    assert deleting == {own.name, drawing.name}  # what the page said, no more, no less
    assert f"These clusters of yours are being deleted: {own.name}, {drawing.name}." in mailoutbox[-1].body


def test_the_page_says_when_no_cluster_is_deleted(manager_client, revoke, org, eight, four_more, mailoutbox):
    ClusterFactory(organization=org, allocation=eight, name="fits-in-eight", workers=8)

    page = manager_client.get(revoke_page(four_more))
    assert named_on_page(page) == []
    assert f"No cluster of {org.name} is deleted." in page.text

    revoke(four_more, "Unused.")
    assert "None of your clusters is deleted." in mailoutbox[-1].body
    assert not Cluster.objects.filter(status=Cluster.Status.DELETING).exists()


def test_a_missing_reason_is_a_form_error_and_revokes_nothing(manager_client, eight):
    response = manager_client.post(revoke_page(eight), {"reason": "  "})

    assert response.status_code == 400
    assert "Give the reason for revoking; the tenant will read it." in response.text
    eight.refresh_from_db()
    assert eight.status == Allocation.Status.ACTIVE


def test_an_already_revoked_allocation_offers_no_form(manager_client, eight):
    manager_client.post(revoke_page(eight), {"reason": "Done."})

    again = manager_client.get(revoke_page(eight))
    assert "This allocation is already revoked." in again.text and 'name="reason"' not in again.text
    late = manager_client.post(revoke_page(eight), {"reason": "Twice."})
    assert late.status_code == 400 and "already revoked" in late.text


def test_only_a_program_manager_reaches_the_page(support_client, member_client, eight):
    assert support_client.get(revoke_page(eight)).status_code == 403
    assert member_client.get(revoke_page(eight)).status_code in (403, 404)


def test_the_email_is_in_the_organizations_language(revoke, org, eight, mailoutbox):
    org.language = "ja"
    org.save(update_fields=["language"])
    ClusterFactory(organization=org, allocation=eight, name="sakura-train")

    revoke(eight, "プログラム終了")  # the manager's page is in English
    [mail] = mailoutbox
    assert mail.subject.startswith("割り当てが取り消されました")
    assert "sakura-train" in mail.body and "削除" in mail.body and "プログラム終了" in mail.body
    assert "revoked" not in mail.body
