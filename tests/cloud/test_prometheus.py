"""The Prometheus client against a real Prometheus (promtool-built TSDB) and against a stub SigV4 endpoint."""

import contextlib
import hashlib
import hmac
import json
import re
import threading
import time
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, quote, unquote

import boto3
import pytest
from celery.exceptions import SoftTimeLimitExceeded

from portal.cloud import calls
from portal.cloud.errors import PermanentCloudError, TransientCloudError
from portal.cloud.prometheus import PrometheusEndpoint, query
from portal.cloud.session import CloudSession
from tests.cloud.test_budget import soft_limit_when
from tests.health.prometheus_server import prometheus  # noqa: F401
from tests.servers import free_port
from workloads.health.dcgm import prometheus_vector_pairs

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
MINUTE = timedelta(minutes=1)
HOST_A, HOST_B = "ip-10-1-0-1", "ip-10-1-0-2"
XID = "DCGM_FI_DEV_XID_ERRORS"
THERMAL = "DCGM_FI_DEV_THERMAL_VIOLATION"  # a counter, in ns

# Host A's GPU 3 raises Xid 79 at T0 and is back to 0 from T0+5min; host B's GPU 0 shows Xid 48 throughout.
SERIES = [
    (XID, {"Hostname": HOST_A, "gpu": "3"}, [(T0, 79), (T0 + MINUTE, 79), (T0 + 5 * MINUTE, 0)]),
    (XID, {"Hostname": HOST_B, "gpu": "0"}, [(T0, 48), (T0 + MINUTE, 48), (T0 + 5 * MINUTE, 48)]),
    (THERMAL, {"Hostname": HOST_A, "gpu": "3"}, [(T0, 1.5e9), (T0 + MINUTE, 2.5e9)], "counter"),
]

AKID, SECRET, TOKEN = "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "FwoGZXIvYXdzEXAMPLETOKEN"
VECTOR = {"status": "success", "data": {"resultType": "vector", "result": []}}
AMP_DENIED = (
    "User: arn:aws:sts::111122223333:assumed-role/PortalAccess/fm-portal-alpha is not authorized to perform: "
    "aps:QueryMetrics on resource: arn:aws:aps:us-east-1:111122223333:workspace/ws-abc"
)


def by_host(payload):
    return {(labels["Hostname"], labels["gpu"]): value for labels, value in prometheus_vector_pairs(payload)}


# -- Against a real Prometheus ------------------------------------------------------------------------


def test_instant_query_returns_each_gpus_latest_value(prometheus):  # noqa: F811
    server = prometheus(SERIES)
    payload = query(PrometheusEndpoint(server.url), XID, at=T0 + 2 * MINUTE)
    assert payload["status"] == "success"
    assert by_host(payload) == {(HOST_A, "3"): 79.0, (HOST_B, "0"): 48.0}
    labels = [item["metric"] for item in payload["data"]["result"]]
    assert {"__name__": XID, "Hostname": HOST_A, "gpu": "3"} in labels


def test_a_query_after_the_xid_cleared_shows_zero(prometheus):  # noqa: F811
    server = prometheus(SERIES)
    payload = query(PrometheusEndpoint(server.url), XID, at=T0 + 6 * MINUTE)
    assert by_host(payload) == {(HOST_A, "3"): 0.0, (HOST_B, "0"): 48.0}


def test_series_without_a_sample_in_the_last_five_minutes_are_absent(prometheus):  # noqa: F811
    server = prometheus(SERIES)
    # The last samples are at T0+5min: Prometheus's 5-minute lookback still sees them just before T0+10min.
    assert len(by_host(query(PrometheusEndpoint(server.url), XID, at=T0 + 9 * MINUTE))) == 2
    assert by_host(query(PrometheusEndpoint(server.url), XID, at=T0 + 11 * MINUTE)) == {}


def test_a_name_regex_fetches_several_families_in_one_request(prometheus):  # noqa: F811
    server = prometheus(SERIES)
    promql = f'{{__name__=~"{XID}|{THERMAL}"}}'
    payload = query(PrometheusEndpoint(server.url), promql, at=T0 + 2 * MINUTE)
    pairs = prometheus_vector_pairs(payload)
    found = {(labels["__name__"], labels["Hostname"], labels["gpu"]): value for labels, value in pairs}
    assert found == {(XID, HOST_A, "3"): 79.0, (XID, HOST_B, "0"): 48.0, (THERMAL, HOST_A, "3"): 2.5e9}


def test_invalid_promql_is_permanent_with_prometheus_message(prometheus):  # noqa: F811
    server = prometheus(SERIES)
    with pytest.raises(PermanentCloudError) as raised:
        query(PrometheusEndpoint(server.url), "sum(", at=T0)
    assert "parse error" in raised.value.message
    assert "HTTP 400" in raised.value.message


def test_connection_refused_is_transient():
    with pytest.raises(TransientCloudError, match="Could not connect to Prometheus"):
        query(PrometheusEndpoint(f"http://127.0.0.1:{free_port()}"), XID, at=T0, timeout=2)


def test_a_naive_time_is_refused():
    with pytest.raises(ValueError, match="timezone-aware"):
        query(PrometheusEndpoint("http://127.0.0.1:1"), XID, at=datetime(2026, 3, 1, 12, 0))


# -- Against a stub SigV4 endpoint (AMP's shape) ---------------------------------------------------------


class Stub:
    """An HTTP server on 127.0.0.1 that records each request and answers `status` with `body`."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.status, self.body, self.delay = 200, json.dumps(VECTOR).encode(), 0.0
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                stub.requests.append(
                    {
                        "method": self.command,
                        "path": self.path,
                        "headers": {k.lower(): v for k, v in self.headers.items()},
                    }
                )
                time.sleep(stub.delay)
                self.send_response(stub.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(stub.body)))
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
                    self.wfile.write(stub.body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/workspaces/ws-abc"
        # A short poll interval: shutdown() at teardown waits up to one interval.
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    def respond(self, status: int, body) -> None:
        self.status, self.body = status, body if isinstance(body, bytes) else json.dumps(body).encode()


@pytest.fixture
def stub():
    server = Stub()
    yield server
    server.server.shutdown()
    server.server.server_close()


@pytest.fixture
def fixed_clock(monkeypatch):
    monkeypatch.setattr("botocore.auth.get_current_datetime", lambda remove_tzinfo=True: datetime(2026, 11, 24, 3, 0))


@pytest.fixture
def no_default_credentials(monkeypatch, tmp_path):
    """boto3's default chain finds nothing, and never asks the EC2 metadata service (beyond 127.0.0.1)."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    for name in ("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def org_session(token: str | None = TOKEN) -> CloudSession:
    session = boto3.Session(aws_access_key_id=AKID, aws_secret_access_key=SECRET, aws_session_token=token)
    return CloudSession(session, "us-east-1")


def expected_signature(recorded: dict, *, secret: str, region: str) -> str:
    """SigV4 computed by hand from the request as received: what AMP checks, independently of botocore."""
    headers = recorded["headers"]
    signed = re.search(r"SignedHeaders=([^,]+)", headers["authorization"])[1]
    path, _, raw_query = recorded["path"].partition("?")
    pairs = sorted(tuple(quote(unquote(part), safe="-_.~") for part in p.split("=", 1)) for p in raw_query.split("&"))
    canonical_query = "&".join(f"{key}={value}" for key, value in pairs)
    canonical_headers = "".join(f"{name}:{' '.join(headers[name].split())}\n" for name in signed.split(";"))
    empty_body = hashlib.sha256(b"").hexdigest()
    canonical = "\n".join(["GET", path, canonical_query, canonical_headers, signed, empty_body])
    amz_date = headers["x-amz-date"]
    scope = f"{amz_date[:8]}/{region}/aps/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = f"AWS4{secret}".encode()
    for part in (amz_date[:8], region, "aps", "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()


def test_amp_requests_are_sigv4_signed_with_the_orgs_credentials(stub, fixed_clock):
    promql = f'{{__name__=~"{XID}|{THERMAL}"}} > 0'  # spaces, quotes, braces, a pipe: all must sign right
    payload = query(PrometheusEndpoint(stub.url, region="us-east-1", session=org_session()), promql, at=T0)

    assert payload == VECTOR
    (recorded,) = stub.requests
    headers = recorded["headers"]
    path, _, raw_query = recorded["path"].partition("?")
    assert path == "/workspaces/ws-abc/api/v1/query"
    assert "+" not in raw_query  # %20 for a space, as in the canonical query string
    assert parse_qs(raw_query) == {"query": [promql], "time": [f"{T0.timestamp():.3f}"]}
    assert headers["x-amz-date"] == "20261124T030000Z"
    assert headers["x-amz-security-token"] == TOKEN
    authorization = (
        r"AWS4-HMAC-SHA256 Credential=(?P<cred>[^,]+), SignedHeaders=(?P<signed>[^,]+), Signature=(?P<sig>\w+)"
    )
    match = re.fullmatch(authorization, headers["authorization"])
    assert match["cred"] == f"{AKID}/20261124/us-east-1/aps/aws4_request"
    assert {"host", "x-amz-date", "x-amz-security-token"} <= set(match["signed"].split(";"))
    assert match["sig"] == expected_signature(recorded, secret=SECRET, region="us-east-1")


def test_without_a_session_the_portals_default_credentials_sign(stub, no_default_credentials, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", AKID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    query(PrometheusEndpoint(stub.url, region="eu-west-1"), XID, at=T0)

    (recorded,) = stub.requests
    assert f"Credential={AKID}/" in recorded["headers"]["authorization"]
    assert "/eu-west-1/aps/aws4_request" in recorded["headers"]["authorization"]
    assert "x-amz-security-token" not in recorded["headers"]  # long-term keys have no session token
    assert recorded["headers"]["authorization"].endswith(
        expected_signature(recorded, secret=SECRET, region="eu-west-1")
    )


def test_no_credentials_is_permanent_and_sends_nothing(stub, no_default_credentials):
    with pytest.raises(PermanentCloudError, match="No AWS credentials were found"):
        query(PrometheusEndpoint(stub.url, region="us-east-1"), XID, at=T0)
    assert stub.requests == []


def test_a_plain_endpoint_is_not_signed(stub):
    query(PrometheusEndpoint(stub.url), XID, at=T0)
    assert "authorization" not in stub.requests[0]["headers"]


@pytest.mark.parametrize("status", [429, 500, 503])
def test_throttling_and_server_errors_are_transient(stub, status):
    stub.respond(status, {"message": "Service is unavailable, try again"})
    with pytest.raises(TransientCloudError, match=f"HTTP {status}: Service is unavailable"):
        query(PrometheusEndpoint(stub.url, region="us-east-1", session=org_session()), XID, at=T0)


def test_access_denied_is_permanent_with_amps_message(stub):
    stub.respond(403, {"message": AMP_DENIED})
    with pytest.raises(PermanentCloudError) as raised:
        query(PrometheusEndpoint(stub.url, region="us-east-1", session=org_session()), XID, at=T0)
    assert "HTTP 403" in raised.value.message
    assert AMP_DENIED in raised.value.message


def test_an_html_error_page_is_quoted_briefly(stub):
    stub.respond(404, b"<html><body><h1>404 Not Found</h1>" + b"x" * 5000 + b"</body></html>")
    with pytest.raises(PermanentCloudError, match='HTTP 404: body "<html><body><h1>404 Not Found') as raised:
        query(PrometheusEndpoint(stub.url), XID, at=T0)
    assert len(raised.value.message) < 400


def test_a_200_that_is_not_json_is_permanent(stub):
    stub.respond(200, b"<html>Grafana</html>")
    with pytest.raises(PermanentCloudError, match="not a JSON object"):
        query(PrometheusEndpoint(stub.url), XID, at=T0)


def test_a_slow_endpoint_times_out_as_transient(stub):
    stub.delay = 1.0
    with pytest.raises(TransientCloudError, match="did not answer within 0.2 seconds"):
        query(PrometheusEndpoint(stub.url), XID, at=T0, timeout=0.2)


# -- Outcomes counted for deep health, and the task's time (portal.cloud.calls) ------------------------------------


def test_amp_outcomes_are_counted_per_account_and_region_and_a_plain_servers_are_not(stub):
    stub.respond(503, {"message": "Service is unavailable, try again"})
    signer = boto3.Session(aws_access_key_id=AKID, aws_secret_access_key=SECRET, aws_session_token=TOKEN)
    amp = PrometheusEndpoint(stub.url, region="us-east-1", session=CloudSession(signer, "us-east-1", "111122223333"))
    with pytest.raises(TransientCloudError):
        query(amp, XID, at=T0)
    stub.respond(200, VECTOR)
    query(amp, XID, at=T0)
    query(PrometheusEndpoint(stub.url), XID, at=T0)  # not AWS: shown on its source only
    [tally] = calls.drain()
    assert (tally.account, tally.region, tally.service) == ("111122223333", "us-east-1", "aps")
    assert (tally.calls, tally.failures, tally.last_failure) == (2, 1, "HTTP 503")


def test_a_query_that_could_not_end_before_the_tasks_deadline_is_not_sent(stub):
    stub.respond(200, VECTOR)
    with calls.time_budget(0), pytest.raises(calls.OutOfTime, match="a query to Prometheus"):
        query(PrometheusEndpoint(stub.url), XID, at=T0)
    assert stub.requests == []


def test_the_soft_time_limit_ends_a_hung_query_as_itself(stub):
    """botocore's HTTP layer wraps Celery's SoftTimeLimitExceeded in an HTTPClientError; it was reported as "could
    not connect". It is the task's time limit, and the task handles it as such."""
    stub.delay = 5.0
    with soft_limit_when(lambda: stub.requests), pytest.raises(SoftTimeLimitExceeded):
        query(PrometheusEndpoint(stub.url), XID, at=T0, timeout=10)
