"""Cluster pages: list, detail with live status, create from an allocation, delete with confirmation."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from tenants.models import StaffRole
from tests.factories import ClusterFactory, MembershipFactory, StaffRoleFactory
from workloads.models import Cluster, ClusterEvent, ClusterNode, HealthEvent

pytestmark = pytest.mark.django_db


def add_nodes(cluster, count):
    now = timezone.now()
    ClusterNode.objects.bulk_create(
        ClusterNode(
            organization=cluster.organization,
            cluster=cluster,
            instance_id=f"i-{cluster.pk:04d}{n:05d}",
            group_name="workers-p5-48xlarge",
            instance_type="p5.48xlarge",
            status="Running" if n else "Failure",
            launch_time=now,
            first_seen_at=now,
            last_seen_at=now,
        )
        for n in range(count)
    )


@pytest.fixture
def support_client(client):
    client.force_login(StaffRoleFactory(role=StaffRole.Role.SUPPORT_ENGINEER).user)
    return client


def test_tenant_lists_its_own_clusters_only(member_client, org, other_org):
    mine = ClusterFactory(organization=org, name="alpha-llm")
    ClusterFactory(organization=other_org, name="beta-secret")
    page = member_client.get("/clusters/")
    assert page.status_code == 200
    assert "alpha-llm" in page.text and "beta-secret" not in page.text
    assert f"/clusters/{mine.pk}/" in page.text
    assert "2 × p5.48xlarge" in page.text


def test_staff_see_every_orgs_clusters(manager_client, org, other_org):
    ClusterFactory(organization=org, name="alpha-llm")
    ClusterFactory(organization=other_org, name="beta-llm")
    page = manager_client.get("/clusters/")
    assert "alpha-llm" in page.text and "beta-llm" in page.text
    assert "Beta Lab" in page.text  # the organization column


def test_empty_list_says_so(member_client, org):
    assert "No clusters yet" in member_client.get("/clusters/").text


def test_list_polls_only_while_a_cluster_is_in_flight(member_client, org):
    cluster = ClusterFactory(organization=org)
    assert 'hx-trigger="every 5s"' not in member_client.get("/clusters/").text
    Cluster.objects.filter(pk=cluster.pk).update(status=Cluster.Status.PROVISIONING)
    fragment = member_client.get("/clusters/", headers={"HX-Request": "true"})
    assert "<html" not in fragment.text
    assert 'id="cluster-rows"' in fragment.text and 'hx-trigger="every 5s"' in fragment.text


@pytest.mark.parametrize("url", ["/clusters/", "detail"])
def test_pages_issue_a_bounded_number_of_queries(member_client, org, url):
    def count(clusters, nodes):
        for _ in range(clusters):
            add_nodes(ClusterFactory(organization=org), nodes)
        target = f"/clusters/{Cluster.objects.first().pk}/" if url == "detail" else url
        with CaptureQueriesContext(connection) as queries:
            assert member_client.get(target).status_code == 200
        return len(queries)

    small = count(2, 2)
    large = count(30, 60)
    assert small == large


def test_detail_shows_status_nodes_health_and_timeline(member_client, org):
    cluster = ClusterFactory(organization=org, status=Cluster.Status.DEGRADED, status_message="Node health problem")
    add_nodes(cluster, 3)
    HealthEvent.objects.create(
        organization=org,
        cluster=cluster,
        instance_id=f"i-{cluster.pk:04d}00000",
        kind=HealthEvent.Kind.NODE_FAILURE,
        severity=HealthEvent.Severity.CRITICAL,
        message="GPU fell off the bus",
        observed_at=timezone.now(),
    )
    ClusterEvent.objects.create(organization=org, cluster=cluster, from_status="in_service", to_status="degraded")
    page = member_client.get(f"/clusters/{cluster.pk}/")
    assert page.status_code == 200
    text = page.text
    assert "Degraded" in text and "Node health problem" in text
    assert f"i-{cluster.pk:04d}00002" in text
    assert "GPU fell off the bus" in text and "1 open" in text
    assert "In service</span> → <span" in text
    assert 'hx-trigger="every 3s"' not in text  # not in flight: no polling


def test_current_nodes_come_first_and_nodes_that_left_are_folded_and_paged(member_client, org):
    """A cluster that replaced 88 of its nodes: the 12 in it come first (the failing one on top), each with
    "Open a case"; the 88 that left are folded apart, the latest first, 20 a page, with no case link."""
    from workloads.clusters.views import GONE_PAGE_SIZE

    cluster = ClusterFactory(organization=org)
    add_nodes(cluster, 100)  # node 0 is "Failure", the rest "Running"
    now = timezone.now()
    gone = ClusterNode.objects.filter(cluster=cluster).order_by("instance_id")[12:]
    for age, node in enumerate(gone):  # the 13th node left last, the 100th first
        ClusterNode.objects.filter(pk=node.pk).update(gone_at=now - timezone.timedelta(minutes=age))
    page = member_client.get(f"/clusters/{cluster.pk}/")
    html = page.text
    current, folded = html.split('data-testid="gone-nodes"')
    assert current.count('data-testid="node-row"') == 12 and "gone-row" not in current
    assert current.count('data-testid="node-case"') == 12
    assert current.index(f"i-{cluster.pk:04d}00000") < current.index(f"i-{cluster.pk:04d}00001")  # failing first
    assert "12 in the cluster" in current
    assert folded.count('data-testid="gone-row"') == GONE_PAGE_SIZE == 20
    assert "node-case" not in folded and "88 nodes have left the cluster" in folded
    assert folded.index(f"i-{cluster.pk:04d}00012") < folded.index(f"i-{cluster.pk:04d}00013")  # the latest first
    assert "Page 1 of 5" in folded and "<details" in html and '<details data-testid="gone-nodes" open' not in html

    second = member_client.get(f"/clusters/{cluster.pk}/", {"gone_page": 5}).text
    assert '<details data-testid="gone-nodes" open' in second  # paging keeps the fold open
    last = second.split('data-testid="gone-nodes"')[1]
    assert last.count('data-testid="gone-row"') == 88 - 4 * 20 and f"i-{cluster.pk:04d}00099" in last


def test_detail_polls_with_a_progress_indicator_while_provisioning(member_client, org):
    cluster = ClusterFactory(organization=org, status=Cluster.Status.PROVISIONING)
    page = member_client.get(f"/clusters/{cluster.pk}/")
    assert 'hx-trigger="every 3s"' in page.text and "<progress" in page.text
    fragment = member_client.get(f"/clusters/{cluster.pk}/", headers={"HX-Request": "true"})
    assert "<html" not in fragment.text and 'id="cluster-live"' in fragment.text


def test_create_form_is_prefilled_from_the_allocation(member_client, org, allocation):
    page = member_client.get(f"/orgs/{org.slug}/clusters/new/?allocation={allocation.pk}")
    assert page.status_code == 200
    form = page.context["form"]
    assert form.initial["allocation"] == allocation.pk
    assert form.initial["instance_count"] == 8
    assert form.initial["name"] == "p5-training"


def test_create_form_offers_what_other_clusters_leave_free(member_client, org, allocation):
    ClusterFactory(organization=org, allocation=allocation, workers=5)  # in service: 5 of the allocation's 8
    ClusterFactory(organization=org, allocation=allocation, workers=4, status=Cluster.Status.DELETED)
    page = member_client.get(f"/orgs/{org.slug}/clusters/new/?allocation={allocation.pk}")
    assert page.context["form"].initial["instance_count"] == 3
    row = page.text[page.text.index('id="headroom"') :]
    assert '<td class="num">8</td><td class="num">5</td><td class="num">3</td>' in row


def post_form(client, org, allocation, **overrides):
    data = {
        "allocation": allocation.pk,
        "name": "llm-pretrain",
        "kind": "hyperpod_slurm",
        "instance_count": 4,
        "threads_per_core": 1,
        "storage": "none",
        "storage_capacity_gib": 1200,
    }
    data.update(overrides)
    return client.post(f"/orgs/{org.slug}/clusters/new/", data)


def test_create_from_the_form_redirects_to_the_live_detail(member_client, org, allocation):
    response = post_form(member_client, org, allocation)
    cluster = Cluster.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/clusters/{cluster.pk}/"
    assert cluster.status == Cluster.Status.REQUESTED
    assert cluster.groups.get(role="worker").instance_count == 4


def test_form_over_the_allocation_shows_the_limit_and_writes_nothing(member_client, org, allocation):
    response = post_form(member_client, org, allocation, instance_count=12)
    assert response.status_code == 400
    assert "12 × p5.48xlarge is more than your allocation allows: 8 in us-east-1" in response.text
    assert not Cluster.objects.exists()


def test_form_refuses_a_lustre_size_fsx_does_not_offer(member_client, org, allocation):
    response = post_form(
        member_client, org, allocation, storage="fsx_lustre_new", s3_data_repository_path="s3://corpus/ja/",
        storage_capacity_gib=2000,
    )  # fmt: skip
    assert response.status_code == 400
    assert "FSx for Lustre comes in 1,200 GiB, 2,400 GiB or a multiple of 2,400 GiB" in response.text
    assert not Cluster.objects.exists()


def test_form_cannot_pick_another_orgs_allocation(member_client, org, allocation, other_allocation):
    response = post_form(member_client, org, other_allocation)
    assert response.status_code == 400
    assert "Select a valid choice" in response.text
    assert not Cluster.objects.exists()


def test_support_engineers_watch_but_cannot_create_or_delete(support_client, org, allocation):
    cluster = ClusterFactory(organization=org)
    assert support_client.get(f"/clusters/{cluster.pk}/").status_code == 200
    assert support_client.get(f"/orgs/{org.slug}/clusters/new/").status_code == 403
    assert post_form(support_client, org, allocation).status_code == 403
    assert support_client.post(f"/clusters/{cluster.pk}/delete/").status_code == 403
    cluster.refresh_from_db()
    assert cluster.status == Cluster.Status.IN_SERVICE


def test_delete_asks_for_confirmation_then_moves_to_deleting(member_client, org):
    cluster = ClusterFactory(organization=org, workers=6)
    confirm = member_client.get(f"/clusters/{cluster.pk}/delete/")
    assert confirm.status_code == 200 and "terminates its 6 instances" in confirm.text
    cluster.refresh_from_db()
    assert cluster.status == Cluster.Status.IN_SERVICE  # looking is not deleting
    response = member_client.post(f"/clusters/{cluster.pk}/delete/")
    assert response.status_code == 302
    cluster.refresh_from_db()
    assert cluster.status == Cluster.Status.DELETING
    assert member_client.post(f"/clusters/{cluster.pk}/delete/").status_code == 400  # already deleting


def test_the_timeline_is_recorded_in_english_and_read_in_each_readers_language(member_client, org):
    cluster = ClusterFactory(organization=org)
    member_client.cookies["django_language"] = "ja"
    member_client.post(f"/clusters/{cluster.pk}/delete/")  # a Japanese reader acts
    event = ClusterEvent.objects.filter(cluster=cluster).latest("pk")
    assert event.message == "Deletion requested"  # the record is one language, as the worker writes it
    assert "削除を依頼しました" in member_client.get(f"/clusters/{cluster.pk}/").text
    member_client.cookies["django_language"] = "en"
    assert "Deletion requested" in member_client.get(f"/clusters/{cluster.pk}/").text


def test_retry_button_requeues_a_failed_cluster(member_client, org):
    cluster = ClusterFactory(organization=org, status=Cluster.Status.FAILED, status_message="capacity")
    page = member_client.get(f"/clusters/{cluster.pk}/")
    assert "Retry" in page.text and "capacity" in page.text
    member_client.post(f"/clusters/{cluster.pk}/retry/")
    cluster.refresh_from_db()
    assert (cluster.status, cluster.attempt) == (Cluster.Status.REQUESTED, 2)


def test_another_member_of_the_same_org_may_delete(client, org):
    cluster = ClusterFactory(organization=org)
    client.force_login(MembershipFactory(organization=org).user)
    assert client.post(f"/clusters/{cluster.pk}/delete/").status_code == 302


def test_admin_edits_cloud_settings_and_shows_clusters_read_only(client, org):
    from django.contrib.auth import get_user_model

    cluster = ClusterFactory(organization=org)
    client.force_login(get_user_model().objects.create_superuser("root", "root@example.com", "x"))
    assert client.get("/admin/workloads/cluster/").status_code == 200
    page = client.get(f"/admin/workloads/cluster/{cluster.pk}/change/")
    assert page.status_code == 200 and "workers-p5-48xlarge" in page.text
    assert client.get("/admin/workloads/cluster/add/").status_code == 403
    assert client.get("/admin/workloads/orgcloudsettings/add/").status_code == 200


def test_cluster_pages_speak_japanese(member_client, org, allocation):
    from django.conf import settings

    cluster = ClusterFactory(organization=org, status=Cluster.Status.PROVISIONING)
    member_client.cookies[settings.LANGUAGE_COOKIE_NAME] = "ja"
    detail = member_client.get(f"/clusters/{cluster.pk}/")
    assert "AWS でプロビジョニング中です。このページは自動で更新されます。" in detail.text
    assert "タイムライン" in detail.text
    over = post_form(member_client, org, allocation, instance_count=40)  # the org holds 16, 2 in use
    assert "40 × p5.48xlarge は割り当ての上限を超えています" in over.text


def test_create_form_is_prefilled_from_a_workload(member_client, org, allocation):
    from tests.factories import WorkloadFactory
    from workloads.models import Workload

    workload = WorkloadFactory(
        organization=org,
        cluster_type=Workload.ClusterType.PARALLELCLUSTER_SLURM,
        storage=Workload.Storage.FSX_LUSTRE_S3,
    )
    page = member_client.get(f"/orgs/{org.slug}/clusters/new/?workload={workload.pk}")
    initial = page.context["form"].initial
    assert initial["workload"] == workload.pk
    assert initial["kind"] == Cluster.Kind.PARALLELCLUSTER
    assert initial["storage"] == Cluster.Storage.FSX_LUSTRE_NEW


def test_without_its_library_parallelcluster_is_marked_and_refused(member_client, org, allocation, monkeypatch):
    monkeypatch.setattr("portal.cloud.parallelcluster.is_installed", lambda: False)
    page = member_client.get(f"/orgs/{org.slug}/clusters/new/?allocation={allocation.pk}").text
    assert "ParallelCluster (Slurm) (not installed on this portal)" in page
    response = post_form(member_client, org, allocation, kind="parallelcluster")
    assert response.status_code == 400
    assert "ParallelCluster is not available on this portal" in response.text
    assert not Cluster.objects.exists()


def test_with_its_library_parallelcluster_is_offered_plainly(member_client, org, allocation, monkeypatch):
    monkeypatch.setattr("portal.cloud.parallelcluster.is_installed", lambda: True)
    page = member_client.get(f"/orgs/{org.slug}/clusters/new/?allocation={allocation.pk}").text
    assert ">ParallelCluster (Slurm)</option>" in page
    response = post_form(member_client, org, allocation, kind="parallelcluster")
    assert response.status_code == 302 and Cluster.objects.get().kind == "parallelcluster"


def test_a_too_long_name_gets_one_error(member_client, org, allocation):
    response = post_form(member_client, org, allocation, name="a" * 41)
    assert response.status_code == 400
    assert len(response.context["form"].errors["name"]) == 1
    assert "at most 40 characters" in response.context["form"].errors["name"][0]
