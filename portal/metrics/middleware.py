"""Every request counted and timed, by the name of the URL route that answered it.

The route's name (`workloads:cluster-detail`, `cluster-jobs-ingest`), never the path: a path carries ids and slugs,
and one label value per cluster or organization would grow Prometheus without bound. What no route answered is
`static` (WhiteNoise's files) or `unmatched` (a 404 before any view).
"""

from __future__ import annotations

import time

from django.conf import settings

from portal.metrics.registry import observe_request

METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def view_of(request) -> str:
    match = getattr(request, "resolver_match", None)
    if match is not None:
        return match.view_name or match.route or "unnamed"
    if settings.STATIC_URL and request.path.startswith(settings.STATIC_URL):
        return "static"
    return "unmatched"


class RequestMetricsMiddleware:
    """First in MIDDLEWARE, so the time and the status are the ones the client gets (a 503 of the database
    middleware, a 429 of the login limits included)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        started = time.perf_counter()
        response = self.get_response(request)
        method = request.method if request.method in METHODS else "other"  # a made-up method is not a new series
        observe_request(
            view=view_of(request), method=method, status=response.status_code, seconds=time.perf_counter() - started
        )
        return response
