import sys

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import DatabaseError, connection
from django.http import JsonResponse
from django.template.loader import render_to_string
from django.utils.translation import gettext as _
from django.views import defaults
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from portal import database
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


def _queue_depths() -> dict[str, int | str]:
    """Messages waiting in each queue, as the broker counts them."""
    depths: dict[str, int | str] = {}
    try:
        with celery_app.connection_for_read() as conn:
            conn.ensure_connection(max_retries=1, timeout=2)
            channel = conn.default_channel
            for queue in settings.WORKER_QUEUES:
                try:
                    depths[queue] = channel.queue_declare(queue=queue, passive=True).message_count
                except Exception:  # a queue nothing was ever sent to does not exist yet: nothing waits in it
                    depths[queue] = 0
    except Exception as exc:
        return {queue: f"unknown: {exc.__class__.__name__}" for queue in settings.WORKER_QUEUES}
    return depths


def _page_state(request) -> str:
    """Renders one real page (the 404, which extends the site's layout) as a person would get it: a static files
    setup that cannot resolve a {% static %} — an image built without collectstatic's manifest — 500s every page
    while the database and the broker are fine."""
    try:
        render_to_string("404.html", request=request)
    except Exception as exc:  # whatever a template raises is what every page would raise
        return f"down: {exc.__class__.__name__}: {exc}".strip()
    return "ok"


@never_cache
@require_safe
def healthz(request):
    """Health for load balancers, docker-compose and operators.

    503 only when the database does not answer: without it web can serve nothing. A broker that is down does not
    stop web (requests still succeed and the reconcilers send their work later: portal.queue), so it answers 200
    with `status: degraded` and says so, like a queue whose worker stopped (`worker`, from each queue's heartbeat:
    workloads.operations). `?deep=1` is the operators' check: each queue's heartbeat and live consumers, the messages
    waiting, beat's last heartbeat sent, the work the reconcilers are catching up on and the AWS endpoints whose
    latest calls failed — 503 when any of it is wrong, each named in `problems`.
    """
    from workloads.operations import health

    checks = {"database": _database_state(), "broker": _broker_state()}
    if checks["database"] != "ok":
        return JsonResponse({"status": "down", **checks}, status=503)
    queues = health.queue_states()
    body: dict = {"status": "ok", **checks, "worker": health.worker_state(queues)}
    if checks["broker"] != "ok":
        body["status"] = "degraded"
    if request.GET.get("deep") != "1":
        return JsonResponse(body, status=200)
    broker_ok = checks["broker"] == "ok"
    depths = _queue_depths() if broker_ok else {}
    consumers = health.queue_consumers(celery_app) if broker_ok else "unknown: the broker is down"
    for queue, state in queues.items():
        state["waiting_messages"] = depths.get(queue, "unknown")
        state["consumers"] = consumers.get(queue, "unknown") if isinstance(consumers, dict) else "unknown"
    body.update(
        queues=queues,
        consumers=health.consumer_state(consumers),
        beat=health.beat_state(),
        backlog=health.backlog(),
        aws=health.aws_state(),
    )
    body["problems"] = health.problems(
        broker=checks["broker"], **{key: body[key] for key in ("worker", "consumers", "beat", "backlog", "aws")}
    )
    body["pages"] = _page_state(request)
    if body["pages"] != "ok":
        body["problems"].append(f"pages: {body['pages']}")
    if body["problems"]:
        body["status"] = "degraded"
    return JsonResponse(body, status=200 if body["status"] == "ok" else 503)


# --- Error pages: the API answers JSON, pages answer the site's templates ------------------------------------


def _wants_json(request) -> bool:
    return request.path.startswith("/api/")


def bad_request(request, exception=None):
    """400 raised before a view could answer (a body over DATA_UPLOAD_MAX_MEMORY_SIZE, too many fields, a
    malformed Host): JSON under /api/, the site's page elsewhere."""
    if _wants_json(request):
        if isinstance(exception, RequestDataTooBig):
            limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE // (1024 * 1024)
            detail = _("The request body is too large: at most %(mb)s MB.") % {"mb": limit}
        else:
            detail = _("Bad request.")
        return JsonResponse({"detail": detail}, status=400)
    return defaults.bad_request(request, exception)


def permission_denied(request, exception=None):
    if _wants_json(request):
        return JsonResponse({"detail": _("You do not have permission to perform this action.")}, status=403)
    return defaults.permission_denied(request, exception)


def page_not_found(request, exception=None):
    if _wants_json(request):
        return JsonResponse({"detail": _("Not found.")}, status=404)
    return defaults.page_not_found(request, exception)


def server_error(request):
    if database.connection_lost(sys.exception()):  # a database blip: 503, try again (portal/database.py)
        return database.unavailable(request, sys.exception())
    if _wants_json(request):
        return JsonResponse({"detail": _("Server error: the team has been told.")}, status=500)
    return defaults.server_error(request)
