from django.db import DatabaseError, connection
from django.http import JsonResponse
from django.views.decorators.cache import never_cache

from portal.celery import app as celery_app


def _database_state() -> str:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError as exc:
        return f"down: {exc}".strip()
    return "ok"


def _broker_state() -> str:
    try:
        with celery_app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=2)
    except Exception as exc:  # kombu raises transport-specific errors; all of them mean "down"
        return f"down: {exc.__class__.__name__}: {exc}".strip()
    return "ok"


@never_cache
def healthz(request):
    """Liveness for load balancers and docker-compose: 200 when database and broker answer."""
    checks = {"database": _database_state(), "broker": _broker_state()}
    healthy = all(state == "ok" for state in checks.values())
    return JsonResponse({"status": "ok" if healthy else "down", **checks}, status=200 if healthy else 503)
