"""The Grafana dashboard (deploy/grafana/portal.json) against a real Prometheus scraping the portal.

Prometheus scrapes the live server's /metrics every second with the bearer token, as docs/operations/metrics.md
tells an operator to; the test exercises the portal (pages, a task, AWS calls, reports, clusters in every state)
before and between scrapes, then runs every panel's query: each must return data, a number and not an empty
answer or NaN. The alert rules' metrics must be among what /metrics serves.

Skipped where Prometheus is not installed, never in CI (tests.environment.unavailable).
"""

from __future__ import annotations

import json
import math
import re
import shutil
import time
import urllib.parse
import urllib.request
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families
from rest_framework.test import APIClient

from tests.cloud.conftest import aws, no_counted_calls, session  # noqa: F401  (fixtures)
from tests.environment import unavailable
from tests.factories import ClusterFactory
from tests.jobs.sacct_rows import HEADER, line
from tests.servers import Server, free_port, start
from workloads.clusters.models import Cluster
from workloads.operations.tasks import heartbeat
from workloads.reporting.services import issue_token
from workloads.usage.dirty import mark_days

DEPLOY = Path(settings.BASE_DIR) / "deploy"
TOKEN = "d" * 40
JOB = "fm-portal"
# What Grafana puts in place of its variables (a 1 s scrape interval makes $__rate_interval its 1 m floor).
GRAFANA_VARIABLES = {"$__rate_interval": "1m", "${job}": JOB, "$job": JOB}


def panels(dashboard: dict) -> list[dict]:
    found = []
    for panel in dashboard["panels"]:
        found += panel.get("panels", [])  # a collapsed row holds its panels
        if panel["type"] != "row":
            found.append(panel)
    return found


def queries() -> list[tuple[str, str]]:
    dashboard = json.loads((DEPLOY / "grafana" / "portal.json").read_text())
    found = []
    for panel in panels(dashboard):
        assert panel.get("targets"), f"panel {panel['title']!r} has no query"
        for target in panel["targets"]:
            expr = target["expr"]
            for variable, value in GRAFANA_VARIABLES.items():
                expr = expr.replace(variable, value)
            assert "$" not in expr, f"{panel['title']}: a variable the test does not know: {target['expr']}"
            found.append((panel["title"], expr))
    return found


def test_the_dashboard_is_importable_json_with_a_query_in_every_panel():
    dashboard = json.loads((DEPLOY / "grafana" / "portal.json").read_text())
    assert dashboard["uid"] and dashboard["title"]
    names = {variable["name"] for variable in dashboard["templating"]["list"]}
    assert names == {"datasource", "job"}
    for panel in panels(dashboard):
        assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
    assert len(queries()) >= 20


# --- Against a real Prometheus ----------------------------------------------------------------------------------------


@pytest.fixture
def scraping_prometheus(live_server, tmp_path):
    missing = [tool for tool in ("prometheus",) if not shutil.which(tool)]
    if missing:
        unavailable("prometheus not on PATH: apt-get install prometheus (Debian's package has it)")
    target = urllib.parse.urlsplit(live_server.url).netloc
    config = tmp_path / "prometheus.yml"
    # The scrape job docs/operations/metrics.md gives, with a 1 s interval.
    config.write_text(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
        f"scrape_configs:\n  - job_name: {JOB}\n    metrics_path: /metrics\n"
        f"    authorization:\n      type: Bearer\n      credentials: {TOKEN}\n"
        f"    static_configs:\n      - targets: ['{target}']\n"
    )
    port = free_port()
    server = start(
        "prometheus",
        [
            "prometheus",
            f"--config.file={config}",
            f"--storage.tsdb.path={tmp_path / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        port=port,
        ready="/-/ready",
        log=tmp_path / "prometheus.log",
    )
    yield server
    server.stop()


def instant(server: Server, expr: str) -> list[dict]:
    url = f"{server.url}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(url, timeout=10) as response:
        answer = json.load(response)
    assert answer["status"] == "success", answer
    return answer["data"]["result"]


def has_numbers(result: list[dict]) -> bool:
    return any(math.isfinite(float(series["value"][1])) for series in result)


def exercise(reporter: APIClient, ingest_url: str, session, pages: Client) -> None:  # noqa: F811
    """One round of what the portal does: pages, tasks, AWS calls, reports."""
    for path in ("/healthz", "/login/", "/no-such-page/"):
        pages.get(path)
    for queue in settings.WORKER_QUEUES:
        heartbeat.apply(args=[queue])
    session.client("sts").get_caller_identity()
    table = "\n".join([HEADER, line("1"), line("2")]) + "\n"
    assert reporter.post(f"{ingest_url}?timezone=UTC", table, content_type="text/plain").status_code == 200
    reporter.post(f"{ingest_url}?timezone=UTC", "not a report", content_type="text/plain")  # refused


@pytest.mark.django_db(transaction=True)
def test_every_panel_returns_data_from_a_real_prometheus(
    catalog,
    org,
    member,
    settings,
    live_server,
    session,  # noqa: F811
    scraping_prometheus,
):
    settings.METRICS_TOKEN = TOKEN
    now = timezone.now()
    for status in Cluster.Status.values:
        ClusterFactory(organization=org, status=status)
    reporting = ClusterFactory(organization=org, last_report_at=now)
    ClusterFactory(organization=org, last_report_at=now - timedelta(hours=1), reporter_silent_since=now)
    Cluster.objects.filter(status=Cluster.Status.PROVISIONING).update(
        claim="c" * 32, lease_until=now + timedelta(minutes=1), status_changed_at=now - timedelta(minutes=20)
    )
    mark_days(org.pk, timezone.localdate() - timedelta(days=1))
    _token, key = issue_token(user=member, cluster=reporting, name="head node")
    reporter = APIClient()
    reporter.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    ingest_url = f"/api/v1/clusters/{reporting.pk}/jobs/ingest/"
    pages = Client()  # the live server's process: its counters are the ones Prometheus scrapes

    exercise(reporter, ingest_url, session, pages)
    deadline = time.monotonic() + 20
    while not instant(scraping_prometheus, "portal_ingest_items_total"):  # scraped once after the first round
        assert time.monotonic() < deadline, scraping_prometheus.log_tail()
        time.sleep(0.2)
    exercise(reporter, ingest_url, session, pages)  # counters move between scrapes: rates and quantiles have data

    pending = dict.fromkeys(queries())
    deadline = time.monotonic() + 20
    while pending and time.monotonic() < deadline:
        for query in list(pending):
            pending[query] = instant(scraping_prometheus, query[1])
            if has_numbers(pending[query]):
                del pending[query]
        time.sleep(0.5)
    assert not pending, "Panels without data:\n" + "\n".join(
        f"{title}: {expr} → {result}" for (title, expr), result in pending.items()
    )

    # What the alert rules read is what /metrics serves.
    served = {
        sample.name
        for family in text_string_to_metric_families(
            pages.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"}).content.decode()
        )
        for sample in family.samples
    }
    read = set(re.findall(r"\bportal_[a-z_]+\b", (DEPLOY / "prometheus" / "alerts.yml").read_text()))
    assert read and read <= served, read - served
