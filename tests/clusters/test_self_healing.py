"""Nothing stuck, nothing lost: lost provisioning is sent again, a broker that is down never fails a request,
polls cannot hang on one account, and the page says what the worker is doing.

The real-worker version (a worker process killed mid-provision, on Redis and on the filesystem broker) is in
test_worker_killed.py; these run the same code paths in-process.
"""

from contextlib import contextmanager
from datetime import timedelta

import pytest
from django.core import mail
from django.utils import timezone

from portal.celery import app
from portal.cloud import CloudStatus, ClusterDescription, TransientCloudError
from tests.clusters.test_worker_integration import forget_connections
from tests.factories import ClusterFactory
from workloads.clusters import provisioning, reconcile
from workloads.clusters import tasks as cluster_tasks
from workloads.clusters.services import GroupRequest, create_cluster
from workloads.models import CaseEvent, Cluster
from workloads.support.services import open_case
from workloads.support.tasks import resend_notifications

pytestmark = pytest.mark.django_db
P5 = "p5.48xlarge"


def create(org, allocation, actor, name="llm-pretrain"):
    """A cluster whose provisioning message is lost: the on-commit send never runs in this test's transaction."""
    return create_cluster(
        organization=org,
        allocation=allocation,
        name=name,
        kind=Cluster.Kind.HYPERPOD_SLURM,
        groups=[GroupRequest(P5, 2)],
        actor=actor,
    )


def age(cluster, seconds: float) -> None:
    """As if the cluster's status changed `seconds` ago."""
    Cluster.objects.filter(pk=cluster.pk).update(status_changed_at=timezone.now() - timedelta(seconds=seconds))


@contextmanager
def eager():
    before = app.conf.task_always_eager, app.conf.task_eager_propagates
    app.conf.task_always_eager = app.conf.task_eager_propagates = True
    try:
        yield
    finally:
        app.conf.task_always_eager, app.conf.task_eager_propagates = before


@pytest.fixture
def broker_down(monkeypatch):
    """Nothing listens on port 1: every publish is a real, refused connection (CI's CELERY_BROKER_URL, which
    Celery reads before its configured URL, is taken out of the way)."""
    monkeypatch.delenv("CELERY_BROKER_URL", raising=False)
    saved = {key: app.conf[key] for key in ("broker_url", "broker_transport_options", "task_always_eager")}
    app.conf.update(broker_url="redis://127.0.0.1:1/0", broker_transport_options={}, task_always_eager=False)
    forget_connections()
    yield
    app.conf.update(saved)
    forget_connections()


@pytest.fixture
def lead(support, org):
    org.lead_engineer = support
    org.save(update_fields=["lead_engineer"])
    return support


LATE = 120 + 60 + 1  # CLUSTER_QUEUE_WAIT + RECONCILE_GRACE, and a second


# --- The reconciler ------------------------------------------------------------------------------------------


def test_a_cluster_whose_message_was_lost_is_sent_again_and_gets_exactly_one_cloud_cluster(
    org, allocation, actor, emulator
):
    cluster = create(org, allocation, actor)
    assert cluster_tasks.reconcile_clusters() == []  # just requested: its message may still be on its way
    age(cluster, LATE)
    with eager():
        assert cluster_tasks.reconcile_clusters() == [cluster.pk]
    cluster.refresh_from_db()
    assert cluster.status == Cluster.Status.IN_SERVICE
    assert emulator.clusters() == [cluster.cloud_name]
    with eager():
        assert cluster_tasks.reconcile_clusters() == []  # in service: nothing left to send


def test_a_cluster_created_in_the_cloud_but_never_recorded_is_adopted_with_its_cloud_id(
    org, allocation, actor, emulator, monkeypatch
):
    cluster = create(org, allocation, actor)

    def killed(*args, **kwargs):
        raise SystemExit("worker killed between the create call and the status save")

    monkeypatch.setattr(provisioning, "record_created", killed)
    with pytest.raises(SystemExit):
        provisioning.provision(cluster.pk)
    monkeypatch.undo()
    cluster.refresh_from_db()
    assert (cluster.status, cluster.cloud_id) == (Cluster.Status.PROVISIONING, "")

    age(cluster, LATE)
    with eager():
        assert cluster_tasks.reconcile_clusters() == [cluster.pk]
    cluster.refresh_from_db()
    assert cluster.status == Cluster.Status.IN_SERVICE
    assert cluster.cloud_id.endswith(f":cluster/{cluster.cloud_name}")
    assert emulator.clusters() == [cluster.cloud_name]


def test_the_poller_records_the_cloud_id_of_a_cluster_it_finds_under_its_name(org, allocation, actor, emulator):
    """The poller reached such a cluster in 41 s but left its cloud_id empty."""
    cluster = create(org, allocation, actor)
    provisioning.provision(cluster.pk)
    Cluster.objects.filter(pk=cluster.pk).update(cloud_id="", status=Cluster.Status.PROVISIONING)
    provisioning.poll_clusters([cluster.pk])
    cluster.refresh_from_db()
    assert cluster.cloud_id.endswith(f":cluster/{cluster.cloud_name}")
    assert cluster.status == Cluster.Status.IN_SERVICE


def test_a_retry_that_is_due_later_is_left_alone_until_it_is_late(org, allocation, actor):
    cluster = create(org, allocation, actor)
    age(cluster, 3600)
    Cluster.objects.filter(pk=cluster.pk).update(
        status=Cluster.Status.PROVISIONING,
        last_error="Could not connect to the endpoint URL",
        retries=3,
        next_attempt_at=timezone.now() + timedelta(minutes=5),  # the task's own retry is scheduled
    )
    assert reconcile.late_clusters().count() == 0
    Cluster.objects.filter(pk=cluster.pk).update(next_attempt_at=timezone.now() - timedelta(seconds=61))
    assert list(reconcile.late_clusters()) == [cluster]  # the retry never came: its worker died


def test_an_attempt_that_outlived_its_lease_counts_as_a_failed_attempt_and_the_last_one_fails_the_cluster(
    org, allocation, actor, broker_down
):
    """A task killed at its hard time limit (botocore swallows the soft one while it waits on a socket) or with
    its worker leaves no error behind: the reconciler says so on the page, and does not resend forever."""
    cluster = create(org, allocation, actor)
    Cluster.objects.filter(pk=cluster.pk).update(
        status=Cluster.Status.PROVISIONING, running_until=timezone.now() - timedelta(seconds=61), retries=2
    )
    assert cluster_tasks.reconcile_clusters() == [cluster.pk]
    cluster.refresh_from_db()
    assert (cluster.retries, cluster.running_until) == (3, None)
    assert cluster.last_error.startswith("The attempt did not finish within the task's time limit")

    Cluster.objects.filter(pk=cluster.pk).update(
        running_until=timezone.now() - timedelta(seconds=61), retries=Cluster.MAX_RETRIES
    )
    assert cluster_tasks.reconcile_clusters() == []
    cluster.refresh_from_db()
    assert cluster.status == Cluster.Status.FAILED
    assert cluster.status_message.startswith("Gave up after repeated transient errors: The attempt did not finish")


def test_work_that_never_started_is_sent_again_without_counting_however_long_the_workers_are_down(
    org, allocation, actor, broker_down
):
    """Seen in review: counting every re-send would fail a cluster after half an hour of a worker outage."""
    cluster = create(org, allocation, actor)
    Cluster.objects.filter(pk=cluster.pk).update(status=Cluster.Status.PROVISIONING)
    for _ in range(Cluster.MAX_RETRIES + 3):  # each minute's run finds the re-sent message never taken
        Cluster.objects.filter(pk=cluster.pk).update(next_attempt_at=timezone.now() - timedelta(seconds=61))
        assert cluster_tasks.reconcile_clusters() == [cluster.pk]
    cluster.refresh_from_db()
    assert (cluster.status, cluster.retries, cluster.last_error) == (Cluster.Status.PROVISIONING, 0, "")


def test_a_requested_cluster_whose_message_was_lost_is_not_counted_as_a_failed_attempt(
    org, allocation, actor, broker_down
):
    cluster = create(org, allocation, actor)
    age(cluster, LATE)
    assert cluster_tasks.reconcile_clusters() == [cluster.pk]
    cluster.refresh_from_db()
    assert (cluster.retries, cluster.last_error) == (0, "")


def test_clusters_the_cloud_knows_or_that_left_provisioning_are_not_reconciled(org):
    for status in (Cluster.Status.IN_SERVICE, Cluster.Status.FAILED, Cluster.Status.DELETED):
        ClusterFactory(organization=org, status=status)
    ClusterFactory(organization=org, status=Cluster.Status.PROVISIONING, cloud_id="arn:aws:sagemaker:x")
    Cluster.objects.update(status_changed_at=timezone.now() - timedelta(hours=2))
    assert reconcile.late_clusters().count() == 0


def test_a_re_sent_cluster_is_not_sent_again_while_its_message_waits(org, allocation, actor, broker_down):
    cluster = create(org, allocation, actor)
    age(cluster, LATE)
    assert cluster_tasks.reconcile_clusters() == [cluster.pk]  # the broker is down: the send is logged, the mark stays
    assert cluster_tasks.reconcile_clusters() == []
    Cluster.objects.filter(pk=cluster.pk).update(next_attempt_at=timezone.now() - timedelta(seconds=61))
    assert cluster_tasks.reconcile_clusters() == [cluster.pk]


# --- A broker that is down never fails a request --------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("catalog")
def test_creating_a_cluster_with_the_broker_down_answers_202_and_the_reconciler_sends_it_later(
    member_api, org, allocation, broker_down, emulator
):
    response = member_api.post(
        "/api/v1/clusters/",
        {"allocation": allocation.pk, "name": "llm", "kind": "hyperpod_slurm", "instance_count": 2},
        format="json",
    )
    assert response.status_code == 202, response.content
    assert response["Content-Type"] == "application/json"
    cluster = Cluster.objects.get(pk=response.json()["id"])
    assert cluster.status == Cluster.Status.REQUESTED
    # Its message never reached the broker: it is due at the reconciler's first run, not a queue wait later.
    assert cluster.next_attempt_at is not None and cluster.next_attempt_at < timezone.now()

    with eager():  # the broker is back by now
        assert cluster_tasks.reconcile_clusters() == [cluster.pk]
    cluster.refresh_from_db()
    assert cluster.status == Cluster.Status.IN_SERVICE
    assert emulator.clusters() == [cluster.cloud_name]


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("catalog")
def test_the_create_form_with_the_broker_down_shows_the_cluster_as_queued(member_client, org, allocation, broker_down):
    data = {
        "allocation": allocation.pk,
        "name": "llm",
        "kind": "hyperpod_slurm",
        "instance_count": 2,
        "threads_per_core": 1,
        "storage": "none",
        "storage_capacity_gib": 1200,
    }
    response = member_client.post(f"/orgs/{org.slug}/clusters/new/", data, follow=True)
    assert response.status_code == 200
    assert "Queued: a worker starts provisioning shortly" in response.text
    assert Cluster.objects.get().status == Cluster.Status.REQUESTED


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("catalog")
def test_a_case_comment_with_the_broker_down_is_saved_and_its_email_sent_later(
    member_api, member, org, lead, broker_down, settings
):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    case = open_case(user=member, organization=org, title="EFA", description="x", category="networking")
    response = member_api.post(f"/api/v1/support-cases/{case.pk}/events/", {"body": "Still down."}, format="json")
    assert response.status_code == 201, response.content
    comment = CaseEvent.objects.get(case=case, kind=CaseEvent.Kind.COMMENT)
    assert comment.notified_at is None and mail.outbox == []

    assert resend_notifications() == 0  # not late yet: its message may still be on its way
    CaseEvent.objects.filter(case=case).update(created_at=timezone.now() - timedelta(seconds=LATE))
    with eager():
        assert resend_notifications() == 2  # the opening and the comment
    assert {m.body.count("Still down.") for m in mail.outbox} == {0, 1}
    assert not CaseEvent.objects.filter(case=case, notified_at=None).exists()
    sent = len(mail.outbox)
    with eager():
        assert resend_notifications() == 0
    assert len(mail.outbox) == sent


def test_case_events_older_than_a_day_are_not_mailed_now(member, org, lead):
    case = open_case(user=member, organization=org, title="EFA", description="x", category="networking")
    CaseEvent.objects.filter(case=case).update(created_at=timezone.now() - timedelta(days=2))
    assert resend_notifications() == 0


# --- Polls cannot hang the worker ----------------------------------------------------------------------------


class HangingAccount:
    """One account's endpoint times out (what a poll sees after its short timeout)."""

    calls = 0

    def describe(self, name):
        HangingAccount.calls += 1
        raise TransientCloudError("Read timeout on endpoint URL", code="ReadTimeoutError")


class HealthyAccount:
    def describe(self, name):
        return ClusterDescription(name=name, status=CloudStatus.IN_SERVICE, raw_status="InService")

    def list_nodes(self, name):
        return []


def test_a_poll_batch_waits_out_one_timeout_per_account_not_one_per_cluster(org, other_org):
    hanging = [ClusterFactory(organization=org, status=Cluster.Status.IN_SERVICE) for _ in range(4)]
    healthy = ClusterFactory(organization=other_org, status=Cluster.Status.IN_SERVICE)
    HangingAccount.calls = 0

    def provider(cluster):
        return HangingAccount() if cluster.organization_id == org.pk else HealthyAccount()

    outcome = provisioning.poll_clusters([c.pk for c in hanging] + [healthy.pk], provider_factory=provider)
    assert outcome == {"polled": 1, "errors": 1, "skipped": 3}
    assert HangingAccount.calls == 1
    healthy.refresh_from_db()
    assert healthy.last_polled_at is not None


def test_polls_use_short_timeouts_and_provisioning_keeps_its_patient_retries(running_cluster):
    from portal.cloud.session import client_config

    poll, task = client_config("poll"), client_config("task")
    # Attempts in all, the first included (tests/cloud/test_budget.py checks both against the tasks' time limits).
    assert (poll.connect_timeout, poll.read_timeout, poll.retries["total_max_attempts"]) == (2, 5, 2)
    assert (task.connect_timeout, task.read_timeout, task.retries["total_max_attempts"]) == (5, 30, 3)
    assert provisioning.poll_provider_for(running_cluster).session.profile == "poll"
    assert provisioning.provider_for(running_cluster).session.profile == "task"


@pytest.fixture
def running_cluster(org, allocation, actor, emulator):
    cluster = create(org, allocation, actor)
    provisioning.provision(cluster.pk)
    return Cluster.objects.select_related("organization").get(pk=cluster.pk)


def test_poll_tasks_have_their_own_queue_and_a_time_limit_inside_their_claim(settings):
    for task in (cluster_tasks.poll_clusters, cluster_tasks.poll_cluster_batch):
        assert settings.CELERY_TASK_ROUTES[task.name] == {"queue": "polls"}
    assert cluster_tasks.poll_cluster_batch.time_limit <= 30  # the claim: claim_clusters_to_poll's 30 s
    assert cluster_tasks.provision_cluster.name not in settings.CELERY_TASK_ROUTES  # the default queue


# --- Visible progress ----------------------------------------------------------------------------------------


class FlakyProvider:
    """Unreachable twice, then answers; on the third call it notes what the page showed meanwhile."""

    calls = 0
    seen: list = []

    def __init__(self, cluster_id):
        self.cluster_id = cluster_id

    def create(self, spec):
        FlakyProvider.calls += 1
        FlakyProvider.seen.append(
            Cluster.objects.values_list("last_error", "retries", "running_until").get(pk=self.cluster_id)
        )
        if FlakyProvider.calls <= 2:
            raise TransientCloudError("Could not connect to the endpoint URL", code="EndpointConnectionError")
        return ClusterDescription(name=spec.name, status=CloudStatus.CREATING, raw_status="Creating", cloud_id="arn:x")


def test_a_transient_error_is_shown_with_the_retry_count_and_when_the_next_attempt_is_due(
    org, allocation, actor, monkeypatch
):
    cluster = create(org, allocation, actor)
    FlakyProvider.calls, FlakyProvider.seen = 0, []
    monkeypatch.setattr(provisioning, "provider_for", lambda c: FlakyProvider(cluster.pk))
    before = timezone.now()
    # Celery's apply() runs the retries inline, one after the other, without waiting out their countdowns.
    assert cluster_tasks.provision_cluster.apply(args=[cluster.pk]).get() == "created"
    first, second, third = FlakyProvider.seen
    assert first[:2] == ("", 0) and first[2] > before  # the running attempt's lease
    assert second[:2] == ("Could not connect to the endpoint URL", 1) and second[2] > before
    assert third[:2] == ("Could not connect to the endpoint URL", 2)
    cluster.refresh_from_db()
    assert (cluster.last_error, cluster.retries, cluster.next_attempt_at, cluster.running_until) == ("", 0, None, None)
    assert cluster.cloud_id == "arn:x"


def test_failed_attempts_add_up_across_re_sent_copies_of_the_task(org, allocation, actor, monkeypatch):
    """Each copy the reconciler sends starts Celery's own retry count at 0; the row's count is what gives up."""
    cluster = create(org, allocation, actor)
    Cluster.objects.filter(pk=cluster.pk).update(retries=Cluster.MAX_RETRIES - 1)
    monkeypatch.setattr(provisioning, "provider_for", lambda c: ThrottledEverywhere())
    ThrottledEverywhere.calls = 0
    assert cluster_tasks.provision_cluster.apply(args=[cluster.pk]).get() == "failed"
    assert ThrottledEverywhere.calls == 2  # the 8th failed attempt is retried once more, the 9th gives up
    cluster.refresh_from_db()
    assert cluster.status == Cluster.Status.FAILED


class ThrottledEverywhere:
    calls = 0

    def create(self, spec):
        ThrottledEverywhere.calls += 1
        raise TransientCloudError("Rate exceeded", code="ThrottlingException")


def test_the_page_and_the_api_say_the_last_error_and_the_next_retry(member_client, member_api, org):
    due = timezone.now() + timedelta(minutes=3)
    cluster = ClusterFactory(
        organization=org,
        status=Cluster.Status.PROVISIONING,
        last_error="AWS unreachable",
        retries=3,
        next_attempt_at=due,
    )
    page = member_client.get(f"/clusters/{cluster.pk}/").text
    local = timezone.localtime(due).strftime("%H:%M:%S")
    assert f"The last attempt failed: AWS unreachable. Retry 3 of 8 at {local}." in " ".join(page.split())
    body = member_api.get(f"/api/v1/clusters/{cluster.pk}/").json()
    assert (body["last_error"], body["retries"]) == ("AWS unreachable", 3)
    assert body["next_attempt_at"] is not None
