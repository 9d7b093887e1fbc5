"""Fair use of the API: how many writes and reports one caller may send a minute (DRF throttling).

Two budgets, each counted per caller in a fixed one-minute window on the shared cache (Redis in production, so
that every gunicorn process counts against the same budget):

- `write`: every POST, PUT, PATCH and DELETE of the API, per API token (or signed-in person, or client address for
  the token endpoint). A person's script filing workloads or cases stays far below it; a loop gone wrong is stopped.
- `ingest`: a cluster's reports (jobs, GPU health, nccl-tests, training progress), per reporter token. It is sized
  for a 1,000-node cluster: fmp-reporter posts each node's dcgm-exporter scrape one after another every 5 minutes
  (1,000 posts, which a fast portal answers within the first minute), one sacct report, and fmp-progress a few
  chunks of each training log — about 1,010 posts in the busiest minute; the default, 2,400 a minute, leaves more
  than twice that.

Over budget is a 429 with `Retry-After` (the seconds to the window's end), like DRF's own throttles; reads are not
counted. A fixed window with an atomic increment costs one cache call a request, where DRF's SimpleRateThrottle
keeps a list of every request's time in the window (2,400 entries read and written back on every report).
"""

from __future__ import annotations

import time

from django.conf import settings
from django.core.cache import cache
from rest_framework.throttling import BaseThrottle

from tenants.logins.lockout import client_address

WINDOW_SECONDS = 60


def caller(request) -> str:
    """Whom a budget belongs to: the token the request carries, else the signed-in person, else the address."""
    token = getattr(request, "auth", None)
    if token is not None and getattr(token, "pk", None) is not None:
        return f"{token._meta.label_lower}:{token.pk}"
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        return f"user:{user.pk}"
    return f"address:{client_address(request)}"


class PerMinuteThrottle(BaseThrottle):
    """`rate_setting` names the setting holding the requests allowed per minute (0: no limit)."""

    scope = ""
    rate_setting = ""
    methods: frozenset[str] = frozenset()  # the methods counted (portal.schema documents a 429 for exactly these)

    def allow_request(self, request, view) -> bool:
        limit = getattr(settings, self.rate_setting)
        if request.method not in self.methods or limit <= 0:
            return True
        now = time.time()
        window = int(now // WINDOW_SECONDS)
        key = f"throttle:{self.scope}:{caller(request)}:{window}"
        # add() then incr(): atomic on Redis; a key outlives its window by a little, never counts in the next.
        cache.add(key, 0, timeout=WINDOW_SECONDS + 5)
        try:
            count = cache.incr(key)
        except ValueError:  # the key expired between add() and incr()
            cache.add(key, 1, timeout=WINDOW_SECONDS + 5)
            count = 1
        self._wait = (window + 1) * WINDOW_SECONDS - now
        return count <= limit

    def wait(self) -> float:
        return max(1.0, self._wait)


class WriteThrottle(PerMinuteThrottle):
    scope = "write"
    rate_setting = "API_WRITES_PER_MINUTE"
    methods = frozenset({"POST", "PUT", "PATCH", "DELETE"})


class IngestThrottle(PerMinuteThrottle):
    scope = "ingest"
    rate_setting = "API_REPORTS_PER_MINUTE"
    methods = frozenset({"POST", "PUT", "PATCH"})


def counted_methods(view) -> set[str]:
    """The methods some throttle of the view counts (the schema's 429)."""
    methods: set[str] = set()
    for throttle in getattr(view, "throttle_classes", ()):
        methods |= set(getattr(throttle, "methods", ()))
    return methods
