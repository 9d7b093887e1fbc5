import sys

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import JsonResponse
from django.template.loader import render_to_string
from django.utils.translation import gettext as _
from django.views import defaults
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from portal import checks, database, parsers
from portal.celery import app as celery_app


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

    states = {"database": checks.database_state(), "broker": checks.broker_state()}
    if states["database"] != "ok":  # nothing else can be read: the one problem named, as deep health names them
        return JsonResponse({"status": "down", **states, "problems": [f"database: {states['database']}"]}, status=503)
    queues = health.queue_states()
    body: dict = {"status": "ok", **states, "worker": health.worker_state(queues)}
    if states["broker"] != "ok":
        body["status"] = "degraded"
    if request.GET.get("deep") != "1":
        return JsonResponse(body, status=200)
    # The AWS endpoints are probed while the workers are asked which queues they consume: each may take seconds.
    with health.probing_aws() as aws:
        broker_ok = states["broker"] == "ok"
        depths = checks.queue_depths() if broker_ok else {}
        consumers = health.queue_consumers(celery_app) if broker_ok else "unknown: the broker is down"
    for queue, state in queues.items():
        state["waiting_messages"] = depths.get(queue, "unknown")
        state["consumers"] = consumers.get(queue, "unknown") if isinstance(consumers, dict) else "unknown"
    body.update(
        queues=queues,
        consumers=health.consumer_state(consumers),
        beat=health.beat_state(),
        backlog=health.backlog(),
        aws=health.aws_state(probes=aws.result()),
    )
    body["problems"] = health.problems(
        broker=states["broker"], **{key: body[key] for key in ("worker", "consumers", "beat", "backlog", "aws")}
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
    """400 raised before a view could answer (too many fields, a malformed Host): JSON under /api/, the site's page
    elsewhere. A body over DATA_UPLOAD_MAX_MEMORY_SIZE that Django found itself is the API's one 413
    (portal.parsers, which answers it first from the Content-Length)."""
    if _wants_json(request):
        if isinstance(exception, RequestDataTooBig):
            limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
            error = parsers.too_large(size=parsers.content_length(request), limit=limit)
            return JsonResponse({"detail": str(error.detail)}, status=error.status_code)
        return JsonResponse({"detail": _("Bad request.")}, status=400)
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
