"""A poll batch: every answer applied in one transaction, in the same queries whatever the number of clusters, each
cluster's rows under its own organization; a batch claims its clusters as it starts, never one another's."""

import threading
from datetime import timedelta

import pytest
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from tests.clusters.conftest import Emulator, seed_scripts
from tests.factories import ClusterFactory, MembershipFactory, OrganizationFactory
from workloads.clusters import provisioning
from workloads.clusters import tasks as cluster_tasks
from workloads.clusters.provisioning import claim_clusters_to_poll, poll_clusters, provision
from workloads.clusters.services import GroupRequest, create_cluster, request_delete
from workloads.models import Cluster, ClusterNode, HealthEvent, NodeInterval
from workloads.usage.models import UsageDirtyDay

P5 = "p5.48xlarge"


def launch(org, allocation, name: str) -> Cluster:
    """A cluster of one controller and two P5 workers, provisioned in the emulator (in service at once there)."""
    cluster = create_cluster(
        organization=org,
        allocation=allocation,
        name=name,
        kind=Cluster.Kind.HYPERPOD_SLURM,
        groups=[GroupRequest(P5, 2)],
        actor=MembershipFactory(organization=org).user,
    )
    provision(cluster.pk)
    return Cluster.objects.get(pk=cluster.pk)


def test_one_batch_keeps_each_clusters_rows_under_its_own_organization(
    org, other_org, allocation, other_allocation, emulator
):
    seed_scripts(other_org)
    mine, theirs = launch(org, allocation, "mine"), launch(other_org, other_allocation, "theirs")
    Emulator(other_org.aws_account_id).set_node_status(theirs.cloud_name, "workers-p5-48xlarge-0", "Failure")

    assert poll_clusters([mine.pk, theirs.pk]) == {"polled": 2, "errors": 0, "skipped": 0}

    mine.refresh_from_db()
    theirs.refresh_from_db()
    assert (mine.status, theirs.status) == (Cluster.Status.IN_SERVICE, Cluster.Status.DEGRADED)
    event = HealthEvent.objects.get()  # the one failed node, on the cluster that has it
    assert (event.cluster, event.organization, event.instance_id) == (theirs, other_org, "workers-p5-48xlarge-0")
    for cluster in (mine, theirs):
        assert ClusterNode.objects.filter(cluster=cluster).count() == 3  # controller + 2 workers
        assert NodeInterval.objects.filter(cluster=cluster, ended_at=None).count() == 3
    for model in (ClusterNode, NodeInterval, HealthEvent):
        assert all(row.organization_id == row.cluster.organization_id for row in model.objects.all()), model
    assert set(UsageDirtyDay.objects.values_list("organization_id", flat=True)) == {org.pk, other_org.pk}


def test_a_batch_of_four_clusters_reads_and_writes_in_the_queries_of_one(org, allocation, emulator):
    clusters = [launch(org, allocation, f"c{n}") for n in range(4)]  # 8 P5, the whole allocation
    poll_clusters([c.pk for c in clusters])  # discovers their nodes

    with CaptureQueriesContext(connection) as one:
        poll_clusters([clusters[0].pk])
    with CaptureQueriesContext(connection) as four:
        poll_clusters([c.pk for c in clusters])

    assert len(four.captured_queries) == len(one.captured_queries)
    assert NodeInterval.objects.filter(ended_at=None).count() == 4 * 3  # extended, never opened again
    assert set(Cluster.objects.values_list("status", flat=True)) == {Cluster.Status.IN_SERVICE}


def test_a_cluster_deleted_while_its_batch_was_asking_the_cloud_is_left_to_the_next_poll(
    org, allocation, emulator, monkeypatch
):
    cluster = launch(org, allocation, "deleted-meanwhile")
    poll_clusters([cluster.pk])
    polled = Cluster.objects.get(pk=cluster.pk).last_polled_at
    seen = NodeInterval.objects.filter(cluster=cluster).values_list("last_seen_at", flat=True).first()
    real_ask = provisioning.ask

    def ask_then_delete(cluster, provider):
        answer = real_ask(cluster, provider)  # the cloud says "in service, three nodes" …
        request_delete(cluster=Cluster.objects.get(pk=cluster.pk), actor=MembershipFactory(organization=org).user)
        return answer  # … about a cluster the portal has just started deleting

    monkeypatch.setattr(provisioning, "ask", ask_then_delete)
    poll_clusters([cluster.pk])

    cluster.refresh_from_db()
    assert cluster.status == Cluster.Status.DELETING
    assert cluster.last_polled_at == polled  # not answered: the next tick asks about it as it is now
    assert NodeInterval.objects.filter(cluster=cluster).values_list("last_seen_at", flat=True).first() == seen


def test_beat_sends_a_message_per_batch_due_and_each_claims_its_own_as_it_starts(org, monkeypatch, settings):
    clusters = [ClusterFactory(organization=org, allocation__instance_count=500) for _ in range(3)]
    ClusterFactory(organization=org, status=Cluster.Status.DELETED)  # not polled
    monkeypatch.setattr(cluster_tasks, "POLL_BATCH_SIZE", 2)
    sent = []
    monkeypatch.setattr(cluster_tasks.poll_cluster_batch, "apply_async", lambda *args, **options: sent.append(options))
    asked = []
    monkeypatch.setattr(provisioning, "poll_clusters", lambda ids: asked.append(ids) or {"polled": 0})

    assert cluster_tasks.poll_clusters() == 3
    # Two messages naming no cluster, dropped if not started by the next tick (which sends what is due then).
    assert sent == [{"expires": settings.CELERY_BEAT_SCHEDULE["poll-clusters"]["schedule"]}] * 2
    for _message in sent:
        cluster_tasks.poll_cluster_batch()
    cluster_tasks.poll_cluster_batch()  # a third, late: nothing is due any more, it asks nothing
    assert [len(ids) for ids in asked] == [2, 1]
    assert sorted(sum(asked, [])) == sorted(c.pk for c in clusters)
    assert cluster_tasks.poll_clusters() == 0  # all claimed: the next tick sends nothing


def test_a_claim_holds_its_clusters_for_30_seconds_and_lets_them_go_if_its_batch_died(org):
    running = ClusterFactory(organization=org)
    Cluster.objects.filter(pk=running.pk).update(last_polled_at=None)
    assert claim_clusters_to_poll(limit=50) == [running.pk]
    assert claim_clusters_to_poll(limit=50) == []  # claimed: another batch passes it over
    Cluster.objects.filter(pk=running.pk).update(last_polled_at=timezone.now() - timedelta(seconds=31))
    assert claim_clusters_to_poll(limit=50) == [running.pk]  # the batch died: free again after 30 s


def test_the_longest_unpolled_are_claimed_first_the_never_polled_before_all(org):
    now = timezone.now()
    old, older, never = (ClusterFactory(organization=org) for _ in range(3))
    Cluster.objects.filter(pk=old.pk).update(last_polled_at=now - timedelta(minutes=1))
    Cluster.objects.filter(pk=older.pk).update(last_polled_at=now - timedelta(minutes=5))
    Cluster.objects.filter(pk=never.pk).update(last_polled_at=None)
    assert claim_clusters_to_poll(limit=2) == [never.pk, older.pk]


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgresql("SKIP LOCKED")
def test_racing_batches_never_claim_the_same_cluster(catalog):
    org = OrganizationFactory()
    ids = {ClusterFactory(organization=org).pk for _ in range(60)}
    Cluster.objects.update(last_polled_at=None)
    racers = 8
    barrier = threading.Barrier(racers)
    claims: list = [None] * racers

    def run(i):
        try:
            connection.ensure_connection()
            barrier.wait()
            claims[i] = claim_clusters_to_poll(limit=10)
        except Exception as error:  # asserted below
            claims[i] = error
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(racers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert all(isinstance(claim, list) for claim in claims), claims
    claimed = [pk for claim in claims for pk in claim]
    assert len(claimed) == len(set(claimed))  # never one cluster in two batches
    assert set(claimed) == ids  # 8 batches of 10 cover the 60 clusters
