"""/metrics: who may read it, what each figure read from the database says, and labels that cannot grow unbounded."""

from __future__ import annotations

import os
from datetime import timedelta

import pytest
from django.db import DatabaseError, connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from portal.metrics import collectors
from tests.factories import ClusterFactory, UserFactory
from workloads.clusters.models import Cluster
from workloads.operations.models import WorkerHeartbeat
from workloads.usage.dirty import mark_days

pytestmark = pytest.mark.django_db
TOKEN = "t" * 40


@pytest.fixture
def token(settings):
    settings.METRICS_TOKEN = TOKEN
    return TOKEN


def scrape(client, token: str = TOKEN) -> dict[tuple[str, tuple], float]:
    response = client.get("/metrics", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 200, response.content[:500]
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.content.decode())
        for sample in family.samples
    }


def value(samples, name: str, **labels) -> float | None:
    return samples.get((name, tuple(sorted(labels.items()))))


# --- Who may read it ------------------------------------------------------------------------------------------------


def test_without_a_token_configured_it_is_off(client, settings):
    settings.METRICS_TOKEN = ""
    assert client.get("/metrics").status_code == 404
    assert client.get("/metrics", headers={"Authorization": "Bearer "}).status_code == 404


@pytest.mark.parametrize("header", ["", "Bearer wrong", f"Basic {TOKEN}", f"Bearer {TOKEN}x", f"Bearer {TOKEN[:-1]}"])
def test_a_missing_or_wrong_token_is_a_401_that_says_what_to_send(client, token, header):
    response = client.get("/metrics", headers={"Authorization": header} if header else {})
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Bearer realm="metrics"'
    assert b"portal_" not in response.content


def test_the_token_reads_it_and_a_post_is_refused(client, token):
    assert value(scrape(client), "portal_database_up") == 1
    assert client.post("/metrics", headers={"Authorization": f"Bearer {token}"}).status_code == 405
    assert "no-cache" in client.get("/metrics", headers={"Authorization": f"Bearer {token}"})["Cache-Control"]


def test_a_signed_in_superuser_reads_it_in_a_browser_other_people_do_not(client, member, manager, settings):
    settings.METRICS_TOKEN = ""
    settings.STAFF_REQUIRE_2FA = False
    client.force_login(member)
    assert client.get("/metrics").status_code == 404
    client.force_login(manager)  # program staff, not a superuser
    assert client.get("/metrics").status_code == 404
    client.force_login(UserFactory(is_superuser=True, is_staff=True))
    response = client.get("/metrics")
    assert response.status_code == 200 and b"portal_clusters" in response.content


def test_a_superuser_who_owes_the_second_factor_is_sent_to_settle_it_first(client, settings):
    settings.METRICS_TOKEN = ""
    settings.STAFF_REQUIRE_2FA = True
    client.force_login(UserFactory(is_superuser=True, is_staff=True))
    response = client.get("/metrics")
    assert response.status_code == 302 and b"portal_" not in response.content


def test_prometheus_asking_for_openmetrics_gets_it(client, token):
    response = client.get(
        "/metrics",
        headers={"Authorization": f"Bearer {token}", "Accept": "application/openmetrics-text;version=1.0.0"},
    )
    assert response["Content-Type"].startswith("application/openmetrics-text")
    assert response.content.rstrip().endswith(b"# EOF")


# --- Requests: by route name, never by path ---------------------------------------------------------------------------


def test_requests_are_labelled_by_route_name_and_status_never_by_path(client, token, member, org):
    client.force_login(member)
    assert client.get(f"/orgs/{org.slug}/usage/").status_code == 200
    client.get("/no/such/page/12345")
    client.generic("BREW", "/healthz")
    samples = scrape(client)
    views = {dict(labels)["view"] for name, labels in samples if name == "portal_http_requests_total"}
    assert "usage:org" in views and "unmatched" in views
    assert not [view for view in views if "/" in view or org.slug in view or "12345" in view], views
    assert value(samples, "portal_http_requests_total", view="unmatched", method="GET", status="404") >= 1
    assert value(samples, "portal_http_requests_total", view="healthz", method="other", status="405") >= 1
    assert value(samples, "portal_http_request_duration_seconds_count", view="usage:org", method="GET") >= 1


# --- What the database says -------------------------------------------------------------------------------------------


def test_clusters_by_state_and_the_oldest_in_each_transitional_state(client, token, org):
    now = timezone.now()
    ClusterFactory(organization=org)
    stuck = ClusterFactory(organization=org, status=Cluster.Status.PROVISIONING)
    ClusterFactory(organization=org, status=Cluster.Status.PROVISIONING)
    Cluster.objects.filter(pk=stuck.pk).update(status_changed_at=now - timedelta(hours=5))
    samples = scrape(client)
    assert value(samples, "portal_clusters", state="in_service") == 1
    assert value(samples, "portal_clusters", state="provisioning") == 2
    assert value(samples, "portal_clusters", state="failed") == 0  # every state, even empty
    assert 5 * 3600 <= value(samples, "portal_cluster_oldest_seconds", state="provisioning") < 5 * 3600 + 60
    assert value(samples, "portal_cluster_oldest_seconds", state="requested") == 0
    # Five hours is past the provisioning budget with the default settings: the ClusterStuck alert's comparison.
    assert value(samples, "portal_cluster_budget_seconds", state="provisioning") < 5 * 3600


def test_the_budget_follows_the_settings(settings):
    before = collectors.state_budgets()
    settings.CLUSTER_TASK_TIME_LIMIT += 100
    after = collectors.state_budgets()
    attempts = Cluster.MAX_RETRIES + 1
    assert after[Cluster.Status.REQUESTED] - before[Cluster.Status.REQUESTED] == 100 * attempts
    assert after[Cluster.Status.PROVISIONING] - after[Cluster.Status.REQUESTED] == collectors.CLOUD_ALLOWANCE_SECONDS


def test_leases_held_and_late_clusters(client, token, org):
    now = timezone.now()
    held = ClusterFactory(organization=org, status=Cluster.Status.PROVISIONING)
    Cluster.objects.filter(pk=held.pk).update(claim="a" * 32, lease_until=now + timedelta(seconds=60))
    lapsed = ClusterFactory(organization=org, status=Cluster.Status.PROVISIONING)
    Cluster.objects.filter(pk=lapsed.pk).update(claim="b" * 32, lease_until=now - timedelta(seconds=60))
    samples = scrape(client)
    assert value(samples, "portal_cluster_leases_held") == 1
    assert value(samples, "portal_clusters_late") == 1  # the lapsed lease: the reconciler sends it again


def test_reporters_reporting_and_silent(client, token, org):
    now = timezone.now()
    ClusterFactory(organization=org, last_report_at=now)
    ClusterFactory(organization=org, last_report_at=now - timedelta(hours=1), reporter_silent_since=now)
    ClusterFactory(organization=org, status=Cluster.Status.DELETED, last_report_at=now, reporter_silent_since=now)
    ClusterFactory(organization=org)  # no reporter installed: neither
    samples = scrape(client)
    assert value(samples, "portal_reporters", state="reporting") == 1
    assert value(samples, "portal_reporters", state="silent") == 1  # a deleted cluster's silence is no news


def test_queue_heartbeats(client, token):
    now = timezone.now()
    ago = lambda seconds: now - timedelta(seconds=seconds)  # noqa: E731
    WorkerHeartbeat.objects.create(queue="celery", sent_at=ago(12), ran_at=ago(10))
    WorkerHeartbeat.objects.create(queue="polls", sent_at=ago(600), ran_at=ago(600))
    samples = scrape(client)
    assert value(samples, "portal_queue_worker_up", queue="celery") == 1
    assert value(samples, "portal_queue_worker_up", queue="polls") == 0
    assert 10 <= value(samples, "portal_queue_heartbeat_age_seconds", queue="celery") < 30
    assert value(samples, "portal_queue_heartbeat_wait_seconds", queue="celery") == pytest.approx(2, abs=0.2)
    assert value(samples, "portal_queue_messages", queue="polls") == 0


def test_rollup_lag_is_the_oldest_change_waiting(client, token, org):
    from workloads.usage.models import UsageDirtyDay

    assert value(scrape(client), "portal_rollup_lag_seconds") == 0
    mark_days(org.pk, timezone.localdate() - timedelta(days=2))
    UsageDirtyDay.objects.update(marked_at=timezone.now() - timedelta(minutes=45))
    samples = scrape(client)
    assert value(samples, "portal_rollup_pending_days") == 3
    assert 45 * 60 <= value(samples, "portal_rollup_lag_seconds") < 46 * 60


def test_a_failing_group_of_figures_leaves_the_others(client, token, monkeypatch):
    def broken(now):
        raise DatabaseError("relation does not exist")
        yield  # pragma: no cover

    monkeypatch.setattr(collectors, "clusters", broken)
    samples = scrape(client)
    assert value(samples, "portal_database_up") == 1
    assert value(samples, "portal_rollup_lag_seconds") == 0
    assert value(samples, "portal_clusters", state="in_service") is None


def test_the_database_down_is_a_figure_not_an_error(client, token, monkeypatch):
    monkeypatch.setattr(collectors, "database_state", lambda: "down: connection refused")
    monkeypatch.setattr(collectors, "broker_state", lambda: "down: ConnectionError")
    samples = scrape(client)
    assert value(samples, "portal_database_up") == 0
    assert value(samples, "portal_broker_up") == 0
    assert not [name for name, _labels in samples if name.startswith(("portal_clusters", "portal_queue_messages"))]


def test_a_scrape_costs_a_few_queries_however_many_clusters(client, token, org):
    for status in Cluster.Status.values:
        ClusterFactory.create_batch(3, organization=org, status=status)
    with CaptureQueriesContext(connection) as captured:
        scrape(client)
    queries = [query["sql"] for query in captured.captured_queries if "SAVEPOINT" not in query["sql"]]
    assert len(queries) <= 8, queries  # one per figure group, whatever the rows: never one per cluster


def test_prometheus_on_the_compose_network_is_not_sent_to_https(client, token, settings):
    """docker-compose's production settings redirect plain HTTP to HTTPS; Prometheus scraping web:8000 directly
    speaks plain HTTP, like the container's health check."""
    settings.SECURE_SSL_REDIRECT = True
    assert client.get("/metrics", headers={"Authorization": f"Bearer {token}"}).status_code == 200
    assert client.get("/login/").status_code == 301


def test_a_short_token_stops_the_portal_at_start():
    import subprocess
    import sys

    from django.conf import settings as django_settings

    done = subprocess.run(
        [sys.executable, "-c", "import portal.settings"],
        cwd=django_settings.BASE_DIR,
        env={**os.environ, "METRICS_TOKEN": "short"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0 and "METRICS_TOKEN must be at least 32 characters" in done.stderr
