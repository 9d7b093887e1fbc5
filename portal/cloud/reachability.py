"""Whether the AWS endpoints the portal calls answer at all, asked directly (deep health, workloads.operations).

The calls' own outcomes (portal.cloud.calls) show an endpoint that accepts connections and never answers only when
a call times out — 40 to 70 s after the fault began — and show it recovered only at the next successful call, which
may be minutes later on a quiet portal. So deep health also sends each endpoint the portal called lately one plain,
unsigned HTTPS request with a short timeout: any HTTP answer (AWS says 403 or 404 to it) means the endpoint answers;
no answer within PROBE_READ_SECONDS, or a refused connection, means it does not. Each endpoint's answer is kept in the
shared cache for PROBE_CACHE_SECONDS, so several checks asking at once send one request.
"""

from __future__ import annotations

import functools
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import boto3
import requests
from botocore.exceptions import BotoCoreError
from django.conf import settings
from django.core.cache import cache

PROBE_CONNECT_SECONDS = 2.0
PROBE_READ_SECONDS = 3.0
PROBE_CACHE_SECONDS = 5
# botocore's event names carry the service's id; a client is made by its name where the two differ.
CLIENT_NAMES = {"cost-explorer": "ce", "aps": "amp"}


@dataclass(frozen=True)
class Probe:
    url: str
    problem: str  # "" when the endpoint answered


def endpoint_of(service: str, region: str) -> str | None:
    """The URL botocore sends `service` calls in `region` to (AWS_ENDPOINT_URL when set); None for a service it does
    not know (a tally's service name from a newer botocore, say)."""
    return settings.AWS_ENDPOINT_URL or _aws_endpoint(service, region)


@functools.lru_cache(maxsize=256)
def _aws_endpoint(service: str, region: str) -> str | None:
    try:
        client = boto3.session.Session().client(CLIENT_NAMES.get(service, service), region_name=region or None)
    except (BotoCoreError, ValueError):
        return None
    return client.meta.endpoint_url


def ask(url: str) -> Probe:
    cached = cache.get(f"aws-probe:{url}")
    if cached is not None:
        return Probe(url, cached)
    try:
        requests.get(url, timeout=(PROBE_CONNECT_SECONDS, PROBE_READ_SECONDS), allow_redirects=False)
        problem = ""
    except requests.exceptions.ConnectTimeout:
        problem = f"no connection within {PROBE_CONNECT_SECONDS:g} s"
    except requests.exceptions.ReadTimeout:
        problem = f"no answer within {PROBE_READ_SECONDS:g} s"
    except requests.exceptions.ConnectionError as error:
        problem = "connection refused" if "refused" in str(error).lower() else "no connection"
    except requests.RequestException as error:
        problem = type(error).__name__
    cache.set(f"aws-probe:{url}", problem, PROBE_CACHE_SECONDS)
    return Probe(url, problem)


def probe(endpoints: list[tuple[str, str]]) -> dict[tuple[str, str], Probe]:
    """(service, region) → what its endpoint did, all asked at once (so a check waits one timeout at most)."""
    urls = {key: endpoint_of(*key) for key in endpoints}
    distinct = sorted({url for url in urls.values() if url})
    if not distinct:
        return {}
    with ThreadPoolExecutor(max_workers=min(len(distinct), 8)) as pool:
        answers = dict(zip(distinct, pool.map(ask, distinct), strict=True))
    return {key: answers[url] for key, url in urls.items() if url}
