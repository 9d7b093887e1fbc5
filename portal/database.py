"""A database that does not answer — restarting, failing over, a connection the server dropped or refused — is a 503
with Retry-After, not a 500: JSON under /api/, a page that says try again elsewhere.

An idempotent read (GET, HEAD) is first tried once more on a fresh connection, after a short pause: a blip shorter
than that is never seen. A write is never tried again here: its transaction went with the connection (nothing was
written), and whether to send it again is the client's call. Django turns an exception anywhere in the request —
a view, a middleware, a template — into the 500 handler (portal.views.server_error), which answers `unavailable()`
for a lost connection (as the middleware does for a view's exception); the middleware, outermost, sees that answer
and retries a read.
"""

import logging
import sqlite3
import sys
import time

from django.core.signals import got_request_exception
from django.db import InterfaceError, OperationalError, connections
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string
from django.utils.translation import gettext as _

logger = logging.getLogger("portal.database")

RETRY_AFTER_SECONDS = 5
# A PostgreSQL restart refuses connections for about a second (0.7 s measured): a read waits this long, once.
RETRY_PAUSE_SECONDS = 0.5
IDEMPOTENT_METHODS = ("GET", "HEAD")

# SQLSTATEs of a lost or refused connection: class 08 (connection exception), the server shutting down, crashed or
# starting up (57P01-57P03), too many connections (53300). Others (a deadlock, a cancelled statement) are not.
_LOST_SQLSTATES = ("57P01", "57P02", "57P03", "53300")
# SQLite has no server: a file that cannot be opened, or stays locked past the busy timeout, is its refusal.
_SQLITE_REFUSALS = ("unable to open database file", "database is locked", "disk I/O error")


def connection_lost(exc: BaseException | None) -> bool:
    """Whether `exc` says the database connection was lost or refused (not that a query was wrong)."""
    if isinstance(exc, InterfaceError):  # a connection already closed or broken
        return True
    if not isinstance(exc, OperationalError):
        return False
    cause = exc.__cause__  # the driver's own exception (Django's DatabaseErrorWrapper)
    sqlstate = getattr(cause, "sqlstate", None)
    if sqlstate:
        return sqlstate.startswith("08") or sqlstate in _LOST_SQLSTATES
    if isinstance(cause, sqlite3.OperationalError):
        return str(cause).startswith(_SQLITE_REFUSALS)
    # psycopg's client-side errors carry no SQLSTATE: the connection could not be made, or it was lost.
    return type(cause).__module__.partition(".")[0] == "psycopg"


def unavailable(request: HttpRequest, exc: BaseException) -> HttpResponse:
    """503 with Retry-After. The page is rendered without the request's context: its context processors query."""
    if request.path.startswith("/api/"):
        detail = _("The database is not answering just now. Try again in a few seconds.")
        response = JsonResponse({"detail": detail}, status=503)
    else:
        response = HttpResponse(render_to_string("503.html"), status=503)
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    response.database_error = f"{exc.__class__.__name__}: {str(exc).strip()}"
    # DatabaseUnavailableMiddleware logs it once, without the traceback: a dropped connection's says nothing more.
    response._has_been_logged = True
    return response


def _in_transaction() -> bool:
    return any(conn.in_atomic_block for conn in connections.all(initialized_only=True))


class DatabaseUnavailableMiddleware:
    """Outermost: a read answered `unavailable()` is tried once more on a fresh connection; each outcome is logged."""

    def __init__(self, get_response):
        self.get_response = get_response

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        # A view's own exception, answered here with DEBUG on too (the 500 handler answers the others, DEBUG off).
        return unavailable(request, exception) if connection_lost(exception) else None

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self._answer(request)
        error = getattr(response, "database_error", None)
        # Inside a transaction (ATOMIC_REQUESTS, a test) its earlier work is gone: a retry would be a different request.
        if error and request.method in IDEMPOTENT_METHODS and not _in_transaction():
            logger.warning(
                "Database connection lost during %s %s (%s): trying once more", request.method, request.path, error
            )
            for conn in connections.all(initialized_only=True):
                conn.close_if_unusable_or_obsolete()  # Django's own check: a broken connection is closed, not reused
            time.sleep(RETRY_PAUSE_SECONDS)
            response = self._answer(request)
            error = getattr(response, "database_error", None)
        if error:
            logger.error("Database unavailable: 503 to %s %s (%s)", request.method, request.path, error)
        return response

    def _answer(self, request: HttpRequest) -> HttpResponse:
        """The response from below; a 500 that a lost connection caused in a middleware (where no process_exception
        sees it: Django turns it into a response, a debug page with DEBUG on) answered `unavailable()` as a view's."""
        request.database_lost = None
        response = self.get_response(request)
        lost = request.database_lost
        if response.status_code == 500 and lost is not None and not hasattr(response, "database_error"):
            response = unavailable(request, lost)
        return response


def _note_lost_connection(sender, request=None, **kwargs) -> None:
    """Django's signal for any exception it answers with a 500: the request keeps a lost connection's exception."""
    exc = sys.exc_info()[1]
    if request is not None and connection_lost(exc):
        request.database_lost = exc


got_request_exception.connect(_note_lost_connection, dispatch_uid="portal-database-lost")
