"""Fair use of the API (portal/throttling.py): writes and reports each have a per-minute budget per caller; over it
is a 429 with Retry-After, reads are never counted, and the schema says where a 429 can come."""

from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.test import RequestFactory
from rest_framework.test import APIClient

from portal.throttling import IngestThrottle, WriteThrottle, caller
from tenants.tokens.services import create_token
from tests.factories import ClusterFactory, ClusterNodeFactory
from workloads.reporting.services import issue_token

START = datetime(2026, 11, 2, 9, 0, 10, tzinfo=UTC)  # 10 s into a minute


def token_client(key: str, scheme: str = "Token") -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"{scheme} {key}")
    return client


@pytest.fixture
def reporter(org, member, catalog):
    cluster = ClusterFactory(organization=org, name="p5-train", cloud_name="fmp-1-p5-train")
    ClusterNodeFactory(cluster=cluster, instance_id="i-0001", hostname="ip-10-1-0-1.ec2.internal")
    _token, key = issue_token(user=member, cluster=cluster, name="head node")
    return cluster, token_client(key)


def test_writes_over_the_budget_are_429_with_retry_after_and_reads_are_not_counted(settings, member):
    settings.API_WRITES_PER_MINUTE = 3
    _token, key = create_token(user=member, name="script", expires_in_days=30, via="page")
    client = token_client(key)
    with time_machine.travel(START, tick=False):
        answers = [client.post("/api/v1/workloads/", {}, format="json").status_code for _ in range(4)]
        assert answers == [400, 400, 400, 429]  # a refused write is still a request sent
        refused = client.post("/api/v1/workloads/", {}, format="json")
        assert refused.status_code == 429
        assert refused["Retry-After"] == "50"  # the seconds to the minute's end
        assert refused.json() == {"detail": "Request was throttled. Expected available in 50 seconds."}
        assert client.get("/api/v1/workloads/").status_code == 200  # reads are never counted
    with time_machine.travel(START + timedelta(minutes=1), tick=False):
        assert client.post("/api/v1/workloads/", {}, format="json").status_code == 400  # a new minute, a new budget


def test_each_token_has_its_own_budget_and_reports_their_own(settings, member, reporter):
    settings.API_WRITES_PER_MINUTE = 1
    settings.API_REPORTS_PER_MINUTE = 2
    cluster, reporter_client = reporter
    _first, first_key = create_token(user=member, name="one", expires_in_days=30, via="page")
    _second, second_key = create_token(user=member, name="two", expires_in_days=30, via="page")
    url = f"/api/v1/clusters/{cluster.pk}/health/ingest/"
    with time_machine.travel(START, tick=False):
        assert token_client(first_key).post("/api/v1/workloads/", {}, format="json").status_code == 400
        assert token_client(first_key).post("/api/v1/workloads/", {}, format="json").status_code == 429
        assert token_client(second_key).post("/api/v1/workloads/", {}, format="json").status_code == 400
        # The reporter's posts count against the reports' budget, not the writes' (spent by now).
        body = {"metrics": "", "host": "ip-10-1-0-1"}
        answers = [reporter_client.post(url, body, format="json").status_code for _ in range(3)]
        assert answers[2] == 429 and 429 not in answers[:2]
        assert 1 <= int(reporter_client.post(url, body, format="json")["Retry-After"]) <= 60


def test_a_thousand_node_cluster_busiest_minute_fits_the_default_reports_budget(settings, member, reporter):
    """fmp-reporter posts 1,000 nodes' scrapes back to back, a sacct report and a few training-log chunks."""
    assert settings.API_REPORTS_PER_MINUTE == 2400  # the default, as docs/api.md says
    cluster, _client = reporter
    request = RequestFactory().post(f"/api/v1/clusters/{cluster.pk}/health/ingest/")
    request.auth = cluster.reporter_tokens.get()
    request.user = member
    throttle = IngestThrottle()
    with time_machine.travel(START, tick=False):
        assert all(throttle.allow_request(request, None) for _ in range(1010))
        assert sum(throttle.allow_request(request, None) for _ in range(2000)) == 2400 - 1010


def test_callers_are_told_apart_by_token_then_person_then_address(member, manager):
    factory = RequestFactory()
    anonymous = factory.post("/api/v1/auth/token/", REMOTE_ADDR="203.0.113.9")
    anonymous.user, anonymous.auth = None, None
    assert caller(anonymous) == "address:203.0.113.9"
    session = factory.post("/api/v1/workloads/")
    session.user, session.auth = member, None
    assert caller(session) == f"user:{member.pk}"
    token, _key = create_token(user=manager, name="s", expires_in_days=30, via="page")
    scripted = factory.post("/api/v1/workloads/")
    scripted.user, scripted.auth = manager, token
    assert caller(scripted) == f"tenants.apitoken:{token.pk}"


def test_the_schema_names_429_exactly_where_a_budget_counts(manager_client):
    schema = manager_client.get("/api/schema/?format=json").json()
    paths = schema["paths"]
    assert "429" in paths["/api/v1/workloads/"]["post"]["responses"]
    assert "429" not in paths["/api/v1/workloads/"]["get"]["responses"]
    ingest = paths["/api/v1/clusters/{id}/health/ingest/"]["post"]["responses"]["429"]
    assert "Retry-After" in ingest["headers"]
    assert WriteThrottle.methods == {"POST", "PUT", "PATCH", "DELETE"}
