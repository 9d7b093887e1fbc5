import re
from contextlib import contextmanager

import pytest
import time_machine
from celery import Celery
from django.db import OperationalError

from tests.cloud.conftest import black_hole, no_counted_calls, refusing_endpoint  # noqa: F401  (fixtures)


@pytest.mark.django_db
def test_healthz_is_200_when_database_and_broker_answer(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    # No worker has run a heartbeat in this test: said, but web itself is healthy.
    assert response.json() == {
        "status": "ok",
        "database": "ok",
        "broker": "ok",
        "worker": "unknown: no heartbeat yet",
    }


@pytest.mark.django_db
def test_healthz_says_the_broker_is_down_but_web_stays_in_service(client, monkeypatch):
    """Requests still succeed without the broker (portal.queue; the reconcilers send the work later), so a load
    balancer must not take web out: 200, with the broker's state and `degraded`."""
    # Nothing listens on port 1: a real connection attempt fails. (Celery lets the environment's
    # CELERY_BROKER_URL override an app's broker argument, so CI's Redis URL must go first.)
    monkeypatch.delenv("CELERY_BROKER_URL", raising=False)
    down = Celery("down", broker="redis://127.0.0.1:1/0", set_as_current=False)
    monkeypatch.setattr("portal.checks.celery_app", down)
    monkeypatch.setattr("portal.views.celery_app", down)
    response = client.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "degraded"
    assert body["database"] == "ok"
    assert body["broker"].startswith("down:")
    assert client.get("/healthz?deep=1").status_code == 503


@pytest.mark.django_db
def test_healthz_is_503_when_the_database_is_down(client, monkeypatch):
    from django.db.backends.utils import CursorWrapper

    def refuse(self, sql, params=None):
        raise OperationalError("connection refused")

    monkeypatch.setattr(CursorWrapper, "execute", refuse)
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["database"] == "down: connection refused"
    deep = client.get("/healthz?deep=1")
    assert deep.status_code == 503
    assert deep.json()["problems"] == ["database: down: connection refused"]


def _heartbeats(seconds_ago: dict[str, float]) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from workloads.operations.models import WorkerHeartbeat

    now = timezone.now()
    for queue, ago in seconds_ago.items():
        ran = now - timedelta(seconds=ago)
        WorkerHeartbeat.objects.update_or_create(
            queue=queue, defaults={"sent_at": ran - timedelta(seconds=2), "ran_at": ran, "worker": "worker@host"}
        )


def _beat_sent(seconds_ago: float) -> None:
    """Beat noted it was alive `seconds_ago` (what its scheduler does every pass: workloads.operations.beat)."""
    from datetime import timedelta

    from django.utils import timezone

    from workloads.operations.beat import note_alive

    with time_machine.travel(timezone.now() - timedelta(seconds=seconds_ago), tick=False):
        note_alive()


@pytest.fixture
def live_worker(tmp_path, monkeypatch):
    """A real Celery worker in this process, on a broker of its own, consuming the queues a test names."""
    from celery.contrib.testing.worker import start_worker
    from kombu.transport import filesystem, virtual

    from portal.celery import app
    from tests.clusters.test_worker_integration import broker

    # The filesystem transport keeps the queue bindings it has written in a process-wide table and does not write
    # them again: a worker's broadcast queue would stay bound in an earlier test's broker folder only.
    monkeypatch.setattr(filesystem.Transport, "global_state", virtual.BrokerState())

    @contextmanager
    def consuming(*queues: str):
        with broker(tmp_path):
            app.__dict__.pop("control", None)  # its broadcasts go where the broker above says, not an earlier one
            with start_worker(app, pool="solo", perform_ping_check=False, loglevel="WARNING", queues=list(queues)):
                yield

    return consuming


@pytest.mark.django_db(transaction=True)
def test_deep_health_is_200_when_every_queue_has_a_live_worker_and_nothing_is_late(client, live_worker):
    _heartbeats({"celery": 10, "polls": 25})
    _beat_sent(1)
    with live_worker("celery", "polls"):
        response = client.get("/healthz?deep=1")
    assert response.status_code == 200, response.json()
    body = response.json()
    assert (body["status"], body["worker"], body["consumers"], body["problems"]) == ("ok", "ok", "ok", [])
    assert body["queues"]["celery"]["heartbeat_waited_seconds"] == 2.0
    assert body["queues"]["polls"]["last_heartbeat_seconds_ago"] >= 25
    assert body["queues"]["polls"]["consumers"] == 1
    assert isinstance(body["queues"]["celery"]["waiting_messages"], int)
    assert body["backlog"] == {"late_clusters": {"count": 0, "oldest_seconds": 0}, "unsent_case_emails": {"count": 0}}
    assert body["beat"] == "ok"
    assert body["aws"] == {"state": "ok", "failing": []}


@pytest.mark.django_db(transaction=True)
def test_a_queue_no_live_worker_consumes_is_named_though_its_heartbeat_is_fresh(client, live_worker):
    """Seen: a worker killed -9 and restarted 30–50 s later never showed, its last heartbeat being still fresh. A
    live worker answers the broadcast at once; a dead one never does."""
    _heartbeats({"celery": 5, "polls": 5})
    _beat_sent(1)
    with live_worker("celery"):
        deep = client.get("/healthz?deep=1")
    assert deep.status_code == 503
    body = deep.json()
    assert body["worker"] == "ok"  # the heartbeats cannot tell yet
    assert body["consumers"].startswith("missing: no live worker consumes polls ")
    assert (body["queues"]["celery"]["consumers"], body["queues"]["polls"]["consumers"]) == (1, 0)
    assert body["problems"] == [f"consumers: {body['consumers']}"]


@pytest.mark.django_db
def test_with_no_worker_at_all_every_queue_is_named(client):
    _heartbeats({"celery": 5, "polls": 5})
    body = client.get("/healthz?deep=1").json()
    assert body["consumers"].startswith("missing: no live worker consumes celery, polls ")


@pytest.mark.django_db
def test_a_heartbeat_more_than_a_minute_late_makes_its_queue_stale(client):
    from workloads.operations.health import HEARTBEAT_SECONDS

    _heartbeats({"celery": HEARTBEAT_SECONDS + 50, "polls": HEARTBEAT_SECONDS + 70})
    assert client.get("/healthz").json()["worker"] == "stale: no heartbeat on polls"


@pytest.fixture
def answering_endpoint(settings):
    """An endpoint that answers every request (404, as AWS answers an unsigned GET of its root with an error)."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class NotFound(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(404)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), NotFound)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _called(service: str = "sts", failure: str = "") -> None:
    """A worker called `service` in us-east-1 and wrote the outcome down after its task."""
    from portal.cloud import calls
    from workloads.operations import cloud_calls

    calls.record(account="111122223333", region="us-east-1", service=service, failure=failure)
    cloud_calls.flush()


@pytest.mark.django_db
def test_an_aws_endpoint_that_refuses_is_named_until_it_answers_again(client, request, settings, answering_endpoint):
    """Seen: during 60 s of refusals /healthz?deep=1 said ok. The calls' outcomes are counted per account, region
    and service (portal.cloud.calls) and written after each task; deep health names an endpoint whose latest failed."""
    from django.core.cache import cache

    from portal import cloud
    from workloads.operations import cloud_calls

    request.getfixturevalue("refusing_endpoint")
    role = "arn:aws:iam::111122223333:role/PortalAccess"
    access = cloud.AccountAccess(role_arn=role, external_id="", region="us-east-1")
    for _ in range(2):
        with pytest.raises(cloud.TransientCloudError):
            cloud.session_for(access, profile="poll")
    cloud_calls.flush()  # what a worker does after each task
    deep = client.get("/healthz?deep=1")
    assert deep.status_code == 503
    [failing] = deep.json()["aws"]["failing"]  # named once, by its calls, though the probe is refused too
    assert failing["summary"] == (
        "sts us-east-1 account 1111…: 2 of 2 calls failed in the last 5 min (no connection (refused or unreachable))"
    )
    assert f"aws: {failing['summary']}" in deep.json()["problems"]
    # The endpoint answers again: it failed by not answering, so its answering the probe clears it at once.
    settings.AWS_ENDPOINT_URL = answering_endpoint
    cache.clear()  # the probe's answer is kept 5 s
    assert client.get("/healthz?deep=1").json()["aws"] == {"state": "ok", "failing": []}


@pytest.mark.django_db
def test_an_aws_endpoint_that_never_answers_is_named_before_any_call_times_out(
    client, settings, request, answering_endpoint
):
    """Seen: a black-holed endpoint was named 44–69 s after it began — when a call finally timed out. Deep health
    probes every endpoint called in the last hour with a 3 s timeout."""
    from django.core.cache import cache

    hole = request.getfixturevalue("black_hole")
    _called("sts")  # called lately, and it answered: no call has failed, let alone timed out
    deep = client.get("/healthz?deep=1")
    [failing] = deep.json()["aws"]["failing"]
    assert failing["summary"] == f"sts us-east-1: not answering (no answer within 3 s, {hole.url})"
    assert f"aws: {failing['summary']}" in deep.json()["problems"]
    assert hole.connections >= 1
    # A failure that is an answer (an error from AWS) is not cleared by the endpoint answering a probe.
    settings.AWS_ENDPOINT_URL = answering_endpoint
    cache.clear()
    assert client.get("/healthz?deep=1").json()["aws"]["state"] == "ok"
    _called("sts", failure="HTTP 503 ServiceUnavailable")
    [failing] = client.get("/healthz?deep=1").json()["aws"]["failing"]
    assert failing["last_failure"] == "HTTP 503 ServiceUnavailable"
    _called("sts")
    assert client.get("/healthz?deep=1").json()["aws"]["state"] == "ok"


@pytest.mark.django_db
def test_deep_health_tells_beat_gone_quiet_from_a_worker_gone_quiet(client):
    _heartbeats({"celery": 400, "polls": 400})
    _beat_sent(400)
    body = client.get("/healthz?deep=1").json()
    assert body["worker"] == "stale: no heartbeat on celery, polls"
    assert re.fullmatch(r"stopped: not running for 40\d s", body["beat"])  # deep health waits ~1 s for workers


@pytest.mark.django_db(transaction=True)  # django_celery_beat closes a connection inside a transaction
def test_a_stopped_beat_is_named_within_seconds_and_cleared_by_its_next_pass(client):
    """Seen: a beat outage shorter than 5 minutes was never named (its heartbeats come every 30 s, and
    django_celery_beat records a send every few minutes). Beat's scheduler now notes each pass, every 2 s at most."""
    from datetime import timedelta

    from django.utils import timezone

    from portal.celery import app
    from workloads.operations.beat import TICK_SECONDS, Scheduler
    from workloads.operations.health import BEAT_STALE_AFTER_SECONDS, beat_state

    assert beat_state() == "unknown: beat has not started yet"
    scheduler = Scheduler(app=app, lazy=True)
    scheduler.setup_schedule()
    start = timezone.now()
    with time_machine.travel(start, tick=False):
        assert scheduler.tick() <= TICK_SECONDS  # it never sleeps longer than that between passes
        assert beat_state() == "ok"
    killed = start + timedelta(seconds=BEAT_STALE_AFTER_SECONDS + 1)
    with time_machine.travel(killed, tick=False):
        assert beat_state() == f"stopped: not running for {BEAT_STALE_AFTER_SECONDS + 1} s"
    with time_machine.travel(killed + timedelta(seconds=1), tick=False):
        scheduler.tick()  # restarted: its first pass clears it
        assert beat_state() == "ok"
    # Named within 15 s of the kill at the latest (a pass just before it, deep health asked every few seconds).
    assert TICK_SECONDS + BEAT_STALE_AFTER_SECONDS < 15


@pytest.mark.django_db
def test_a_queue_without_a_worker_is_said_on_healthz_and_fails_the_deep_check(client):
    """Seen: /healthz stayed 200 with no worker running. Web stays healthy (the load balancer must not pull it),
    but the answer says so, and the operators' deep check fails."""
    _heartbeats({"celery": 10, "polls": 600})
    shallow = client.get("/healthz")
    assert shallow.status_code == 200
    assert shallow.json()["worker"] == "stale: no heartbeat on polls"
    deep = client.get("/healthz?deep=1")
    assert deep.status_code == 503
    assert deep.json()["status"] == "degraded"
    assert deep.json()["queues"]["polls"]["state"] == "stale"


@pytest.mark.django_db
def test_late_work_fails_the_deep_check_with_its_count_and_age(client, org):
    from datetime import timedelta

    from django.utils import timezone

    from tests.factories import ClusterFactory
    from workloads.models import Cluster

    _heartbeats({"celery": 1, "polls": 1})
    _beat_sent(1)
    cluster = ClusterFactory(organization=org, status=Cluster.Status.REQUESTED)
    Cluster.objects.filter(pk=cluster.pk).update(status_changed_at=timezone.now() - timedelta(minutes=10))
    deep = client.get("/healthz?deep=1")
    assert deep.status_code == 503
    late = deep.json()["backlog"]["late_clusters"]
    assert late["count"] == 1 and 590 <= late["oldest_seconds"] <= 700


@pytest.mark.django_db
def test_the_worker_healthcheck_command_fails_without_a_recent_heartbeat():
    from django.core.management import call_command
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="queue celery: {'state': 'unknown'}"):
        call_command("workerhealth", "--queue=celery")
    _heartbeats({"celery": 5, "polls": 500})
    call_command("workerhealth", "--queue=celery")
    with pytest.raises(CommandError, match="'state': 'stale'"):
        call_command("workerhealth", "--queue=polls")


@pytest.mark.django_db
def test_deep_health_renders_a_page(client):
    _heartbeats({"celery": 1, "polls": 1})
    _beat_sent(1)
    assert client.get("/healthz?deep=1").json()["pages"] == "ok"


@pytest.mark.django_db
def test_a_static_setup_that_breaks_every_page_fails_the_deep_check(client, settings, tmp_path):
    """Seen in the production image: collectstatic wrote no manifest, every page was a 500 and /healthz was green.
    The storage production uses, over a collected folder without a manifest."""
    _heartbeats({"celery": 1, "polls": 1})
    _beat_sent(1)
    settings.STATIC_ROOT = tmp_path
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
    }
    assert client.get("/healthz").status_code == 200  # the load balancer's check: web itself answers
    deep = client.get("/healthz?deep=1")
    assert deep.status_code == 503
    assert deep.json()["status"] == "degraded"
    assert deep.json()["pages"] == "down: ValueError: Missing staticfiles manifest entry for 'img/favicon.svg'"
    assert f"pages: {deep.json()['pages']}" in deep.json()["problems"]


@pytest.mark.django_db
def test_a_worker_that_starts_says_so_for_its_queues_at_once(client):
    """Seen in `make chaos`: for the first 30 s of every start deep health said "worker: unknown: no heartbeat yet",
    until beat's first heartbeat reached the workers."""
    from types import SimpleNamespace

    from workloads.operations.tasks import heartbeat_as_a_worker_starts

    _beat_sent(1)
    assert client.get("/healthz").json()["worker"] == "unknown: no heartbeat yet"
    for queue in ("celery", "polls"):  # what Celery hands the signal: the worker's consumer
        consumer = SimpleNamespace(hostname=f"{queue}@host", app=SimpleNamespace(amqp=SimpleNamespace(
            queues=SimpleNamespace(consume_from={queue: object()}))))  # fmt: skip
        heartbeat_as_a_worker_starts(sender=consumer)
    assert client.get("/healthz").json()["worker"] == "ok"


@pytest.mark.django_db
def test_work_is_named_late_once_its_reconciler_should_have_sent_it_not_while_it_is_due(client, org, settings):
    """Seen in `make chaos`: the emails of comments made while Redis was down were named for a minute after it came
    back, each the moment the email reconciler was due to send it; deep health names what a reconciler missed."""
    from datetime import timedelta

    from django.utils import timezone

    from tests.factories import ClusterFactory
    from workloads.clusters.reconcile import late_clusters, reconcile_every
    from workloads.models import Cluster
    from workloads.operations.health import BACKLOG_MARGIN_SECONDS, backlog

    _heartbeats({"celery": 1, "polls": 1})
    _beat_sent(1)
    due = settings.CLUSTER_QUEUE_WAIT + settings.RECONCILE_GRACE  # the reconciler sends it from then on
    cluster = ClusterFactory(organization=org, status=Cluster.Status.REQUESTED)
    Cluster.objects.filter(pk=cluster.pk).update(status_changed_at=timezone.now() - timedelta(seconds=due + 5))
    assert late_clusters().count() == 1  # the reconciler's next run sends it
    assert backlog()["late_clusters"]["count"] == 0  # not missed yet
    missed = due + reconcile_every() + BACKLOG_MARGIN_SECONDS + 5
    Cluster.objects.filter(pk=cluster.pk).update(status_changed_at=timezone.now() - timedelta(seconds=missed))
    assert backlog()["late_clusters"]["count"] == 1
    problems = client.get("/healthz?deep=1").json()["problems"]
    assert any(problem.startswith("backlog: 1 late clusters") for problem in problems)
