"""/metrics: the portal's own figures in Prometheus's text format (or OpenMetrics, when the scraper asks for it).

Not public. Prometheus sends `Authorization: Bearer <METRICS_TOKEN>` (compared in constant time); a signed-in
superuser may look at it in a browser too. Anyone else gets a 401 when a token is set, and a 404 when none is: no
token, no endpoint (docs/operations/metrics.md).
"""

from __future__ import annotations

import hmac

from django.conf import settings
from django.http import Http404, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe
from prometheus_client import REGISTRY, CollectorRegistry
from prometheus_client.exposition import choose_encoder
from prometheus_client.multiprocess import MultiProcessCollector

from portal.metrics import registry as counters
from portal.metrics.collectors import PortalCollector


def bearer_token_matches(request) -> bool:
    token = settings.METRICS_TOKEN
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    if not token or scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(given.strip().encode(), token.encode())


class _ThisProcess:
    """Single-process mode: this process's counters, and prometheus_client's process and platform figures."""

    def collect(self):
        return REGISTRY.collect()


def scrape_registry() -> CollectorRegistry:
    """What one scrape reads: every process's counters (summed from their files in multiprocess mode), and the
    figures read from the database and the broker now."""
    registry = CollectorRegistry(auto_describe=False)
    if counters.MULTIPROCESS_DIR:
        MultiProcessCollector(registry, path=counters.MULTIPROCESS_DIR)
    else:
        registry.register(_ThisProcess())
    registry.register(PortalCollector())
    return registry


@never_cache
@require_safe
def metrics(request):
    # The token first: Prometheus never needs the session, so a scrape reads no session row (the database may be the
    # thing that is down).
    if not bearer_token_matches(request) and not (request.user.is_active and request.user.is_superuser):
        if not settings.METRICS_TOKEN:
            raise Http404
        response = HttpResponse("Send the metrics token: Authorization: Bearer <METRICS_TOKEN>.\n", status=401)
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        response["Content-Type"] = "text/plain; charset=utf-8"
        return response
    encoder, content_type = choose_encoder(request.headers.get("Accept", ""))
    return HttpResponse(encoder(scrape_registry()), content_type=content_type)
