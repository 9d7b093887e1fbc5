"""Instant queries against a Prometheus HTTP API: a plain server, or Amazon Managed Service for Prometheus.

botocore's own HTTP stack and SigV4 signer do the work, so the portal needs no extra HTTP library. The
caller validates the returned vector (workloads.health.dcgm.prometheus_vector_pairs).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode, urlsplit, urlunsplit

import boto3
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.exceptions import ConnectionError as BotoConnectionError
from botocore.exceptions import ConnectTimeoutError, HTTPClientError, ReadTimeoutError, SSLError
from botocore.httpsession import URLLib3Session
from botocore.utils import get_environ_proxies

from portal.cloud import calls
from portal.cloud.errors import PermanentCloudError, TransientCloudError

if TYPE_CHECKING:
    from portal.cloud.session import CloudSession


@dataclass(frozen=True)
class PrometheusEndpoint:
    url: str  # base URL: http://127.0.0.1:9090, https://aps-workspaces.<region>.amazonaws.com/workspaces/ws-…
    region: str = ""  # non-empty: Amazon Managed Service for Prometheus, every request SigV4-signed for "aps"
    session: CloudSession | None = None  # whose credentials sign; None: the portal's own default credentials


QUERY_TIMEOUT = 10.0  # seconds to connect, and again to read the answer


def query(endpoint: PrometheusEndpoint, promql: str, *, at: datetime, timeout: float = QUERY_TIMEOUT) -> dict[str, Any]:
    """The JSON body of GET {url}/api/v1/query?query=…&time=<unix seconds> (an instant query at `at`)."""
    if at.utcoffset() is None:
        raise ValueError("`at` must be timezone-aware: a naive datetime has no single unix time.")
    base = endpoint.url.rstrip("/")
    shown = _without_credentials(base)  # messages end up on pages: never a user:password@ from the URL
    secret = base.split("//", 1)[-1].split("@", 1)[0] + "@" if shown != base else None
    # Encode exactly as SigV4's canonical query string does (RFC 3986, %20 for a space), so the URL on the
    # wire is the one that was signed; urlencode's default quote_plus would turn spaces into "+".
    params = urlencode({"query": promql, "time": f"{at.timestamp():.3f}"}, quote_via=quote, safe="-_.~")
    request = AWSRequest(method="GET", url=f"{base}/api/v1/query?{params}", headers={"Accept": "application/json"})
    if endpoint.region:
        _sign(request, endpoint)
    # Connecting and reading each may take `timeout`: not started when the running task has not that long left.
    calls.ensure_time_for(2 * timeout, what=f"a query to Prometheus at {shown}")
    # Same proxy rules (HTTPS_PROXY, NO_PROXY) as the boto3 clients of this deployment.
    http = URLLib3Session(timeout=timeout, proxies=get_environ_proxies(request.url))
    try:
        response = http.send(request.prepare())
    except Exception as error:
        _record(endpoint, calls.failure_of(error))
        if (interrupt := calls.soft_limit_interrupt(error)) is not None:
            raise interrupt from None  # the task's soft time limit, which botocore's HTTP layer wrapped
        _raise_for(error, shown=shown, secret=secret, timeout=timeout)
        raise
    finally:
        http.close()
    status, body = response.status_code, response.content
    try:
        payload = json.loads(body)
    except (ValueError, RecursionError):  # a source's answer nested too deeply is no answer either (portal.parsers)
        payload = None
    _record(endpoint, calls.failure_of_answer(status, "Throttling" if status == 429 else ""))
    if status == 429 or status >= 500:
        raise TransientCloudError(
            f"Prometheus at {shown} answered HTTP {status}: {_detail(payload, body)}. This is usually temporary: "
            "a later attempt may succeed.",
            code=str(status),
        )
    if status != 200:
        raise PermanentCloudError(
            f"Prometheus at {shown} rejected the query with HTTP {status}: {_detail(payload, body)}.",
            code=str(status),
        )
    if not isinstance(payload, dict):
        raise PermanentCloudError(
            f"Prometheus at {shown} answered with something that is not a JSON object ({_excerpt(body)}). Check "
            "that the URL is the base address of a Prometheus server.",
            code="NotJson",
        )
    return payload


def _record(endpoint: PrometheusEndpoint, failure: str) -> None:
    """Amazon Managed Service for Prometheus is an AWS endpoint: its outcomes count with the others (a self-managed
    server's show on its source's page only)."""
    if endpoint.region:
        account = endpoint.session.account_id if endpoint.session else ""
        calls.record(account=account, region=endpoint.region, service="aps", failure=failure)


def _raise_for(error: Exception, *, shown: str, secret: str | None, timeout: float) -> None:
    """The CloudError for a request that got no answer, if it is one of those."""
    if isinstance(error, ConnectTimeoutError | ReadTimeoutError):
        raise TransientCloudError(
            f"Prometheus at {shown} did not answer within {timeout:g} seconds; a later attempt may succeed.",
            code="Timeout",
        ) from error
    if isinstance(error, SSLError):  # a certificate that does not match will not start matching on a retry
        raise PermanentCloudError(
            f"The TLS connection to Prometheus at {shown} failed ({_scrub(error, secret)}). Check the URL and its "
            "certificate.",
            code="SSLError",
        ) from error
    if isinstance(error, BotoConnectionError | HTTPClientError):  # connection refused, DNS failure, dropped connection
        raise TransientCloudError(
            f"Could not connect to Prometheus at {shown} ({_scrub(error, secret)}). Check that the URL is right and "
            "the server is running; a later attempt may succeed.",
            code="ConnectionError",
        ) from error


def _sign(request: AWSRequest, endpoint: PrometheusEndpoint) -> None:
    session = endpoint.session.boto3_session if endpoint.session else boto3.Session()
    credentials = session.get_credentials()
    if credentials is None:
        raise PermanentCloudError(
            "No AWS credentials were found to sign requests to Amazon Managed Service for Prometheus at "
            f"{_without_credentials(endpoint.url)}. Give the portal credentials (or link the organization's role) "
            "that allow aps:QueryMetrics.",
            code="NoCredentials",
        )
    # Frozen: refreshable credentials must not change between the key id and the signature.
    SigV4Auth(credentials.get_frozen_credentials(), "aps", endpoint.region).add_auth(request)


def _detail(payload: Any, body: bytes) -> str:
    """Prometheus's `error`, AWS's `message`, or else the start of the body."""
    if isinstance(payload, dict):
        for key in ("error", "message", "Message"):
            if isinstance(payload.get(key), str) and payload[key]:
                return payload[key]
    return _excerpt(body)


def _excerpt(body: bytes) -> str:
    text = " ".join(body.decode("utf-8", "replace").split())
    return f'body "{text[:200]}"' if text else "empty body"


def _without_credentials(url: str) -> str:
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


def _scrub(error: Exception, secret: str | None) -> str:
    """The error's text without the URL's credentials (urllib3 repeats the whole URL in its errors)."""
    return str(error).replace(secret, "") if secret else str(error)
