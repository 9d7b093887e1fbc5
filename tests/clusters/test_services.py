"""Cluster services against moto's SageMaker in process: lifecycle, allocation limit, redelivery, polling."""

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from portal.cloud import CloudStatus, ClusterDescription, TransientCloudError
from tenants.capacity.allocations import revoke_allocation
from tenants.models import Allocation
from tests.clusters.conftest import seed_scripts
from tests.factories import ActiveAllocationFactory, ClusterFactory, instance_type
from workloads.clusters import provisioning
from workloads.clusters import tasks as cluster_tasks
from workloads.clusters.lifecycle import transition
from workloads.clusters.provisioning import (
    apply_description,
    claim_clusters_to_poll,
    delete,
    poll_clusters,
    provision,
    record_created,
)
from workloads.clusters.services import GroupRequest, create_cluster, request_delete, retry_cluster
from workloads.models import Cluster, ClusterEvent, HealthEvent, NodeInterval
from workloads.usage.intervals import node_hours

pytestmark = pytest.mark.django_db
P5 = "p5.48xlarge"


def create(org, allocation, actor, count=2, name="llm-pretrain", **kwargs):
    return create_cluster(
        organization=org,
        allocation=allocation,
        name=name,
        kind=kwargs.pop("kind", Cluster.Kind.HYPERPOD_SLURM),
        groups=[GroupRequest(P5, count)],
        actor=actor,
        **kwargs,
    )


def timeline(cluster) -> list[tuple[str, str]]:
    return list(cluster.events.order_by("pk").values_list("from_status", "to_status"))


# --- Create and the allocation limit -------------------------------------------------------


def test_create_records_a_requested_cluster_and_enqueues_provisioning_on_commit(
    org, allocation, actor, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as callbacks:
        cluster = create(org, allocation, actor, count=4)
    assert cluster.status == Cluster.Status.REQUESTED
    assert cluster.cloud_name == f"fmp-{cluster.pk}-llm-pretrain"
    assert cluster.lifecycle_s3_uri == "s3://sagemaker-alpha-lifecycle/hyperpod/"
    groups = sorted(cluster.groups.values_list("role", "instance_type", "instance_count"))
    assert groups == [("controller", "m5.12xlarge", 1), ("worker", P5, 4)]
    assert timeline(cluster) == [("", "requested")]
    assert len(callbacks) == 1  # provision_cluster, only once the transaction commits


def test_a_cluster_larger_than_the_allocation_is_refused_with_a_clear_error(org, allocation, actor):
    with pytest.raises(ValidationError) as raised:
        create(org, allocation, actor, count=9)
    (message,) = raised.value.message_dict["instance_count"]
    assert message == (
        "9 × p5.48xlarge is more than your allocation allows: 8 in us-east-1, "
        "of which 0 are already used by your other clusters (8 free)."
    )
    assert not Cluster.objects.exists()


def test_instances_held_by_the_orgs_other_live_clusters_count_against_the_allocation(org, allocation, actor):
    create(org, allocation, actor, count=6, name="first")
    with pytest.raises(ValidationError, match="6 are already used by your other clusters \\(2 free\\)"):
        create(org, allocation, actor, count=3, name="second")
    create(org, allocation, actor, count=2, name="second")  # exactly what is left fits
    Cluster.objects.filter(name="first").update(status=Cluster.Status.DELETED)
    create(org, allocation, actor, count=6, name="third")  # a deleted cluster holds nothing


def test_another_orgs_allocation_cannot_be_used(org, allocation, other_allocation, actor):
    with pytest.raises(ValidationError) as raised:
        create(org, other_allocation, actor)
    assert raised.value.message_dict["allocation"] == ["This allocation belongs to another organization."]
    assert not Cluster.objects.exists()


def test_a_scheduled_allocation_is_not_usable_yet(org, allocation, actor):
    Allocation.objects.filter(pk=allocation.pk).update(status=Allocation.Status.SCHEDULED)
    allocation.refresh_from_db()
    with pytest.raises(ValidationError, match="not active today"):
        create(org, allocation, actor)


def test_an_instance_type_the_org_has_no_allocation_of_is_refused(org, allocation, actor):
    with pytest.raises(ValidationError, match="no active allocation of trn1.32xlarge"):
        create_cluster(
            organization=org,
            allocation=allocation,
            name="trn",
            kind=Cluster.Kind.HYPERPOD_SLURM,
            groups=[GroupRequest("trn1.32xlarge", 1)],
            actor=actor,
        )


def test_org_without_cloud_settings_is_told_to_ask_the_program_team(org, actor):
    allocation = ActiveAllocationFactory(organization=org, pool__instance_type=instance_type(P5))
    with pytest.raises(ValidationError, match="not set up for clusters yet"):
        create(org, allocation, actor)


# --- Provisioning ------------------------------------------------------------------------------


def test_provision_reaches_in_service_in_the_emulator(org, allocation, actor, emulator):
    cluster = create(org, allocation, actor)
    assert provision(cluster.pk) == "created"
    cluster.refresh_from_db()
    assert cluster.status == Cluster.Status.IN_SERVICE
    assert cluster.cloud_id.endswith(f":cluster/{cluster.cloud_name}")
    assert timeline(cluster) == [("", "requested"), ("requested", "provisioning"), ("provisioning", "in_service")]
    assert emulator.clusters() == [cluster.cloud_name]
    assert cluster.nodes.count() == 3  # listed with the create: the page shows them as it turns in service
    sent = emulator.cluster(cluster.cloud_name).instance_groups
    assert {g["InstanceGroupName"]: g["InstanceType"] for g in sent} == {
        "controller-machine": "ml.m5.12xlarge",
        "workers-p5-48xlarge": "ml.p5.48xlarge",
    }


def test_provisioning_run_three_times_creates_one_cluster(org, allocation, actor, emulator):
    cluster = create(org, allocation, actor)
    results = [cluster_tasks.provision_cluster.apply(args=[cluster.pk]).get() for _ in range(3)]
    assert results == ["created", "skipped", "skipped"]
    cluster.refresh_from_db()
    assert cluster.status == Cluster.Status.IN_SERVICE
    assert emulator.clusters() == [cluster.cloud_name]
    assert len(timeline(cluster)) == 3


def test_provisioning_interrupted_after_the_create_call_finds_its_cluster_on_rerun(
    org, allocation, actor, emulator, monkeypatch
):
    cluster = create(org, allocation, actor)
    real_record = record_created

    def crash(*args):
        raise SystemExit("worker killed between the create call and the status save")

    monkeypatch.setattr(provisioning, "record_created", crash)
    with pytest.raises(SystemExit):
        provision(cluster.pk)
    cluster.refresh_from_db()
    assert cluster.status == Cluster.Status.PROVISIONING and cluster.cloud_id == ""
    assert emulator.clusters() == [cluster.cloud_name]

    monkeypatch.setattr(provisioning, "record_created", real_record)
    for _ in range(2):  # the redelivered message, and one more for good measure
        provision(cluster.pk)
    cluster.refresh_from_db()
    assert cluster.status == Cluster.Status.IN_SERVICE
    assert emulator.clusters() == [cluster.cloud_name]


def test_permanent_error_fails_with_the_clouds_message_and_retry_uses_a_new_name(
    org, allocation, actor, emulator, django_capture_on_commit_callbacks
):
    org.cloud_settings.lifecycle_s3_uri = "s3://alpha-scripts/hyperpod/"
    org.cloud_settings.save()
    seed_scripts(org)  # the scripts are there, but HyperPod only reads s3://sagemaker… buckets
    cluster = create(org, allocation, actor)
    assert provision(cluster.pk) == "failed"
    cluster.refresh_from_db()
    assert cluster.status == Cluster.Status.FAILED
    assert "does not start with 's3://sagemaker'" in cluster.status_message
    assert emulator.clusters() == []

    org.cloud_settings.lifecycle_s3_uri = "s3://sagemaker-alpha-lifecycle/hyperpod/"
    org.cloud_settings.save()
    Cluster.objects.filter(pk=cluster.pk).update(lifecycle_s3_uri=org.cloud_settings.lifecycle_s3_uri)
    cluster.refresh_from_db()
    with django_capture_on_commit_callbacks() as callbacks:
        retry_cluster(cluster=cluster, actor=actor)
    cluster.refresh_from_db()
    assert (cluster.status, cluster.attempt) == (Cluster.Status.REQUESTED, 2)
    assert cluster.cloud_name == f"fmp-{cluster.pk}-llm-pretrain-r2"
    assert len(callbacks) == 2  # clean up attempt 1's name, provision attempt 2
    provision(cluster.pk)
    cluster.refresh_from_db()
    assert cluster.status == Cluster.Status.IN_SERVICE


def test_a_cluster_that_is_not_failed_cannot_be_retried(org, actor):
    cluster = ClusterFactory(organization=org)
    with pytest.raises(ValidationError, match="failed to provision"):
        retry_cluster(cluster=cluster, actor=actor)


def test_cloud_reporting_failed_lands_its_message_on_the_cluster(org, allocation, actor, emulator):
    cluster = create(org, allocation, actor)
    provision(cluster.pk)
    emulator.set_cluster_status(cluster.cloud_name, "Failed", "InsufficientInstanceCapacity for ml.p5.48xlarge")
    poll_clusters([cluster.pk])
    cluster.refresh_from_db()
    assert cluster.status == Cluster.Status.FAILED
    assert cluster.status_message == "InsufficientInstanceCapacity for ml.p5.48xlarge"


class ThrottledProvider:
    calls = 0

    def create(self, spec):
        ThrottledProvider.calls += 1
        raise TransientCloudError("Rate exceeded", code="ThrottlingException")


def test_transient_errors_are_retried_by_the_task_then_land_on_the_cluster(org, allocation, actor, monkeypatch):
    cluster = create(org, allocation, actor)
    monkeypatch.setattr(provisioning, "provider_for", lambda cluster: ThrottledProvider())
    ThrottledProvider.calls = 0
    cluster_tasks.provision_cluster.apply(args=[cluster.pk])  # eager: retries run inline, without waiting
    assert ThrottledProvider.calls == cluster_tasks.MAX_RETRIES + 1
    cluster.refresh_from_db()
    assert cluster.status == Cluster.Status.FAILED
    assert cluster.status_message == "Gave up after repeated transient errors: Rate exceeded"


def test_backoff_grows_exponentially_and_stays_below_the_visibility_timeout():
    assert [round(cluster_tasks.backoff(n) // 10) * 10 for n in range(4)] == [10, 20, 40, 80]
    assert max(cluster_tasks.backoff(n) for n in range(20)) <= 605


# --- Compare-and-set ----------------------------------------------------------------------------


def test_a_transition_the_lifecycle_does_not_allow_changes_nothing(org):
    cluster = ClusterFactory(organization=org, status=Cluster.Status.DELETED)
    assert transition(cluster_id=cluster.pk, to=Cluster.Status.IN_SERVICE) is False
    cluster.refresh_from_db()
    assert cluster.status == Cluster.Status.DELETED
    assert not ClusterEvent.objects.exists()


def test_a_stale_poll_cannot_resurrect_a_cluster_being_deleted(org, allocation, actor, emulator):
    cluster = create(org, allocation, actor)
    provision(cluster.pk)
    stale = Cluster.objects.get(pk=cluster.pk)  # read by a poll before the user clicked delete
    request_delete(cluster=cluster, actor=actor)
    apply_description(stale, ClusterDescription(name=stale.cloud_name, status=CloudStatus.IN_SERVICE), nodes=[])
    cluster.refresh_from_db()
    assert cluster.status == Cluster.Status.DELETING


# --- Polling: nodes, health, intervals ----------------------------------------------------------


@pytest.fixture
def running(org, allocation, actor, emulator):
    cluster = create(org, allocation, actor)
    provision(cluster.pk)
    poll_clusters([cluster.pk])
    cluster.refresh_from_db()
    return cluster


def test_poll_syncs_nodes_and_opens_one_interval_per_node(running):
    nodes = sorted(running.nodes.values_list("instance_id", "group_name", "instance_type", "status"))
    assert nodes == [
        ("controller-machine-0", "controller-machine", "m5.12xlarge", "Running"),
        ("workers-p5-48xlarge-0", "workers-p5-48xlarge", P5, "Running"),
        ("workers-p5-48xlarge-1", "workers-p5-48xlarge", P5, "Running"),
    ]
    for _ in range(3):
        Cluster.objects.filter(pk=running.pk).update(last_polled_at=None)
        poll_clusters([running.pk])
    intervals = NodeInterval.objects.filter(cluster=running)
    assert intervals.count() == 3  # repeated polls extend, never add
    assert all(i.ended_at is None for i in intervals)
    launch = running.nodes.get(instance_id="workers-p5-48xlarge-0").launch_time
    assert intervals.get(instance_id="workers-p5-48xlarge-0").started_at == launch


def test_failed_node_degrades_the_cluster_until_it_recovers(running, emulator):
    emulator.set_node_status(running.cloud_name, "workers-p5-48xlarge-1", "Failure")
    poll_clusters([running.pk])
    poll_clusters([running.pk])  # the same failure seen twice is one event
    running.refresh_from_db()
    assert running.status == Cluster.Status.DEGRADED
    (event,) = HealthEvent.objects.filter(cluster=running)
    assert (event.kind, event.severity, event.instance_id) == ("node_failure", "critical", "workers-p5-48xlarge-1")
    assert event.resolved_at is None

    emulator.set_node_status(running.cloud_name, "workers-p5-48xlarge-1", "Running")
    poll_clusters([running.pk])
    running.refresh_from_db()
    event.refresh_from_db()
    assert running.status == Cluster.Status.IN_SERVICE
    assert event.resolved_at is not None
    assert timeline(running)[-2:] == [("in_service", "degraded"), ("degraded", "in_service")]


def test_replaced_node_closes_its_interval_and_opens_one_for_the_replacement(running, emulator):
    emulator.replace_node(running.cloud_name, "workers-p5-48xlarge-0", "workers-p5-48xlarge-9")
    poll_clusters([running.pk])
    old = NodeInterval.objects.get(instance_id="workers-p5-48xlarge-0")
    new = NodeInterval.objects.get(instance_id="workers-p5-48xlarge-9")
    assert old.ended_at is not None and new.ended_at is None
    assert running.nodes.get(instance_id="workers-p5-48xlarge-0").gone_at is not None
    replaced = HealthEvent.objects.get(kind=HealthEvent.Kind.NODE_REPLACED)
    assert replaced.instance_id == "workers-p5-48xlarge-0"
    assert replaced.resolved_at is not None  # the group is back at full strength already
    running.refresh_from_db()
    assert running.status == Cluster.Status.IN_SERVICE


def test_a_node_gone_without_replacement_keeps_the_cluster_degraded(running, emulator):
    del emulator.cluster(running.cloud_name).nodes["workers-p5-48xlarge-1"]
    poll_clusters([running.pk])
    running.refresh_from_db()
    assert running.status == Cluster.Status.DEGRADED
    assert HealthEvent.objects.get(kind=HealthEvent.Kind.NODE_REPLACED).resolved_at is None


def test_delete_closes_every_interval_and_ends_deleted(running, actor, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as callbacks:
        request_delete(cluster=running, actor=actor)
    assert len(callbacks) == 1
    running.refresh_from_db()
    assert running.status == Cluster.Status.DELETING
    assert delete(running.pk) == "deleted"
    running.refresh_from_db()
    assert running.status == Cluster.Status.DELETED
    assert not NodeInterval.objects.filter(cluster=running, ended_at=None).exists()
    assert delete(running.pk) == "skipped"  # a redelivered delete does nothing


def test_revoking_the_allocation_deletes_its_clusters(
    running, org, allocation, actor, manager, django_capture_on_commit_callbacks, mailoutbox
):
    waiting = create(org, allocation, actor, name="not-yet-provisioned")
    gone = create(org, allocation, actor, name="already-gone")
    Cluster.objects.filter(pk=gone.pk).update(status=Cluster.Status.DELETED)
    elsewhere = create(org, ActiveAllocationFactory(organization=org, pool=allocation.pool), actor, name="elsewhere")
    with django_capture_on_commit_callbacks(execute=True):
        revoke_allocation(user=manager, allocation=allocation, reason="Capacity withdrawn for the spring cycle.")
    statuses = dict(Cluster.objects.values_list("name", "status"))
    assert statuses == {
        running.name: Cluster.Status.DELETING,
        waiting.name: Cluster.Status.DELETING,
        gone.name: Cluster.Status.DELETED,
        elsewhere.name: Cluster.Status.REQUESTED,  # another allocation's cluster stays
    }
    assert delete(running.pk) == "deleted"  # what the queued task does, against the emulator
    event = running.events.get(to_status=Cluster.Status.DELETING)
    assert (event.actor, event.message) == (manager, "Deletion requested: its allocation was revoked")
    body = mailoutbox[-1].body
    assert f"These clusters of yours are being deleted: {running.name}, {waiting.name}." in body
    assert f"/orgs/{org.slug}/capacity/" in body


@pytest.mark.parametrize(("count", "deleted"), [(12, True), (8, False)])
def test_revoking_an_allocation_another_cluster_draws_on_deletes_it_if_it_no_longer_fits(
    org, allocation, actor, manager, count, deleted
):
    extra = ActiveAllocationFactory(organization=org, pool=allocation.pool, instance_count=4)
    cluster = create(org, allocation, actor, count=count)  # the allocation's 8, plus the extra 4 if 12
    revoke_allocation(user=manager, allocation=extra, reason="Capacity moved to another team.")
    cluster.refresh_from_db()
    assert (cluster.status == Cluster.Status.DELETING) is deleted


def test_deleted_or_deleting_cluster_cannot_be_deleted_again(running, actor):
    request_delete(cluster=running, actor=actor)
    with pytest.raises(ValidationError, match="cannot be deleted"):
        request_delete(cluster=running, actor=actor)


def test_cluster_deleted_outside_the_portal_fails_visibly(running, emulator):
    del emulator.backend.clusters[running.cloud_name]
    poll_clusters([running.pk])
    running.refresh_from_db()
    assert running.status == Cluster.Status.FAILED
    assert "no longer exists in AWS" in running.status_message
    assert not NodeInterval.objects.filter(cluster=running, ended_at=None).exists()


def test_a_cluster_polled_moments_ago_is_skipped_by_the_next_tick(running):
    assert running.pk not in claim_clusters_to_poll()
    Cluster.objects.filter(pk=running.pk).update(last_polled_at=None)
    assert running.pk in claim_clusters_to_poll()


# Beat's messages and the batches' claims: tests/clusters/test_poll_batches.py.


def test_cloud_settings_without_a_security_group_are_refused_before_any_cloud_call(org, allocation, actor):
    org.cloud_settings.security_group_ids = []
    org.cloud_settings.save()
    with pytest.raises(ValidationError, match="at least one subnet and one security group"):
        create(org, allocation, actor)
    assert not Cluster.objects.exists()


def test_node_hours_count_closed_intervals_to_their_end_and_open_ones_to_the_last_poll_that_saw_them(running, emulator):

    import time_machine
    from django.db.models import F

    NodeInterval.objects.filter(cluster=running).update(started_at=F("last_seen_at") - timedelta(hours=3))
    assert node_hours(running) == pytest.approx(3 * 3)  # 3 nodes (controller included), 3 hours each
    with time_machine.travel(timezone.now() + timedelta(hours=1)):
        # Time passing alone adds nothing: a stopped poller must not invent usage.
        assert node_hours(running) == pytest.approx(3 * 3)
        poll_clusters([running.pk])  # the next poll sees them still running, an hour later
        assert node_hours(running) == pytest.approx(3 * 4, abs=0.01)

        del emulator.cluster(running.cloud_name).nodes["workers-p5-48xlarge-1"]  # terminated
        poll_clusters([running.pk])
    closed = NodeInterval.objects.get(instance_id="workers-p5-48xlarge-1")
    assert closed.ended_at is not None and closed.last_seen_at == closed.ended_at
    assert node_hours(running) == pytest.approx(3 * 4, abs=0.01)


def test_a_node_back_after_a_missed_listing_restarts_where_its_interval_ended(running, emulator):
    nodes = emulator.cluster(running.cloud_name).nodes
    node = nodes.pop("workers-p5-48xlarge-1")
    poll_clusters([running.pk])
    nodes["workers-p5-48xlarge-1"] = node  # listed again, same instance, same launch time
    poll_clusters([running.pk])
    first, second = NodeInterval.objects.filter(instance_id="workers-p5-48xlarge-1").order_by("started_at")
    assert first.ended_at is not None and second.ended_at is None
    assert second.started_at == first.ended_at  # not its launch time: that stretch is counted already


def test_one_clusters_cloud_error_does_not_stop_the_rest_of_the_batch(running, other_org, emulator):
    broken = ClusterFactory(organization=other_org)  # its org's role is not assumable: no role ARN
    type(other_org).objects.filter(pk=other_org.pk).update(role_arn="")
    emulator.set_node_status(running.cloud_name, "workers-p5-48xlarge-0", "Failure")
    outcome = poll_clusters([broken.pk, running.pk])
    assert outcome == {"polled": 1, "errors": 1, "skipped": 0}
    running.refresh_from_db()
    broken.refresh_from_db()
    assert running.status == Cluster.Status.DEGRADED
    # Unchanged; the tick's claim (claim_clusters_to_poll) recorded when it was last asked about.
    assert broken.status == Cluster.Status.IN_SERVICE
