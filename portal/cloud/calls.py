"""Every AWS call, watched: kept inside its task's time, and its outcome counted per endpoint.

Three botocore event hooks, registered on each boto3 session the cloud layer makes (so on every client made from it,
the ParallelCluster library's too):

- `before-send`: an attempt is not started when it could not finish (connect + read timeout) before the running
  task's deadline (its soft time limit less a margin, set by portal.celery at task start). A poll batch over many
  accounts, or a provisioning attempt of several calls, then ends with a TransientCloudError its task records,
  instead of running into the soft limit in the middle of a call.
- `needs-retry`: Celery's soft time limit raises SoftTimeLimitExceeded wherever the worker is; inside a socket read
  botocore wraps it in an HTTPClientError, which its retry mode takes for a network error and retries, so a hung call
  used to run on to the hard limit. The hook lets the soft limit through at once.
- `after-call` / `after-call-error`: each call's outcome (after botocore's retries) is counted per (account, region,
  service) and minute, in memory; `drain()` hands the counts over (workloads.operations.cloud_calls writes them after
  each task), so there is no database write per call. The outcome and the call's time (from `before-call`) also go
  to /metrics, per service and region (portal.metrics).
"""

from __future__ import annotations

import contextvars
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime

from botocore.exceptions import (
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    HTTPClientError,
    ReadTimeoutError,
)
from celery.exceptions import SoftTimeLimitExceeded

from portal.cloud.errors import TRANSIENT_CODES, TransientCloudError
from portal.metrics.registry import observe_aws_call

# Time kept back from a task's soft limit to write down the failure (a few row updates) and schedule the retry.
RECORD_MARGIN_SECONDS = 5.0

# (deadline on the monotonic clock, the whole budget in seconds) of the running task, None outside one.
_deadline: contextvars.ContextVar[tuple[float, float] | None] = contextvars.ContextVar("cloud_deadline", default=None)


class OutOfTime(TransientCloudError):
    """Not started: the running task has no time left for one more attempt. Not an endpoint's failure."""


# --- The running task's deadline ------------------------------------------------------------------------------------


def begin_task(*, soft_time_limit: float | None) -> contextvars.Token:
    """Called as a task starts: its cloud calls must be over `RECORD_MARGIN_SECONDS` before its soft limit. Returns
    the token `end_task` takes (a task run eagerly inside another gets the outer task's deadline back)."""
    if not soft_time_limit:
        return _deadline.set(None)
    budget = max(soft_time_limit - RECORD_MARGIN_SECONDS, 0.0)
    return _deadline.set((time.monotonic() + budget, budget))


def end_task(token: contextvars.Token) -> None:
    try:
        _deadline.reset(token)
    except ValueError:  # set in another context (never in Celery's own pools): no deadline is better than a stale one
        _deadline.set(None)


@contextmanager
def time_budget(seconds: float):
    """The same deadline outside a Celery task (tests, commands): calls end `seconds` from now at the latest."""
    token = _deadline.set((time.monotonic() + seconds, seconds))
    try:
        yield
    finally:
        _deadline.reset(token)


def ensure_time_for(seconds: float, *, what: str) -> None:
    """Raise OutOfTime when an attempt lasting up to `seconds` could not end before the task's deadline.

    Where the whole budget is shorter than one attempt (a deployment with short time limits, CLUSTER_TASK_TIME_LIMIT
    of 20 s in the worker-kill tests), refusing would fail every call: calls then start while half the budget is
    left, and the soft time limit is what ends one that hangs."""
    deadline = _deadline.get()
    if deadline is None:
        return
    left = deadline[0] - time.monotonic()
    if left < min(seconds, deadline[1] / 2):
        raise OutOfTime(
            f"Not started: {what} may take up to {seconds:g} s and this task has {max(left, 0):.0f} s left before its "
            "time limit; the next attempt goes on.",
            code="OutOfTime",
        )


def soft_limit_interrupt(error: BaseException) -> SoftTimeLimitExceeded | None:
    """The soft time limit a botocore HTTPClientError wraps, if that is what it is."""
    if isinstance(error, SoftTimeLimitExceeded):
        return error
    if isinstance(error, HTTPClientError) and isinstance(error.kwargs.get("error"), SoftTimeLimitExceeded):
        return error.kwargs["error"]
    return None


# --- Outcomes, counted per endpoint and minute ------------------------------------------------------------------------


@dataclass
class Tally:
    account: str
    region: str
    service: str
    minute: datetime
    calls: int = 0
    failures: int = 0
    last_failure: str = ""
    last_failure_at: datetime | None = None
    last_success_at: datetime | None = None


_tallies: dict[tuple, Tally] = {}
_tallies_lock = threading.Lock()


def record(*, account: str, region: str, service: str, failure: str = "", at: datetime | None = None) -> None:
    """One call's outcome: `failure` says what went wrong ("timeout", "connection refused", "HTTP 503"), "" if the
    endpoint answered."""
    at = at or datetime.now(UTC)
    minute = at.replace(second=0, microsecond=0)
    key = (account, region, service, minute)
    with _tallies_lock:
        tally = _tallies.get(key)
        if tally is None:
            tally = _tallies[key] = Tally(account, region, service, minute)
        tally.calls += 1
        if failure:
            tally.failures += 1
            tally.last_failure, tally.last_failure_at = failure[:200], at
        else:
            tally.last_success_at = at


def drain() -> list[Tally]:
    """What was counted since the last drain, and forget it (the caller writes it down)."""
    with _tallies_lock:
        tallies = list(_tallies.values())
        _tallies.clear()
    return tallies


def failure_of(error: BaseException) -> str:
    """A few words for a call that got no usable answer."""
    if isinstance(error, ReadTimeoutError | ConnectTimeoutError):
        return "timeout"
    if soft_limit_interrupt(error) is not None:
        return "stopped at the task's time limit"
    if isinstance(error, EndpointConnectionError):
        return "no connection (refused or unreachable)"
    if isinstance(error, ConnectionClosedError):
        return "connection closed"
    return type(error).__name__


# The failures above that say the endpoint did not answer, as opposed to an answer that is an error: an endpoint
# that failed so is well again once it answers at all (workloads.operations.health, portal.cloud.reachability).
NO_ANSWER = frozenset(
    {"timeout", "stopped at the task's time limit", "no connection (refused or unreachable)", "connection closed"}
)


def failure_of_answer(status: int, code: str) -> str:
    """ "" for an answer that says the endpoint works (2xx, and a 4xx about the request: not found, invalid …)."""
    if status >= 500:
        return f"HTTP {status}" + (f" {code}" if code else "")
    if code in TRANSIENT_CODES:
        return code
    return ""


# --- The hooks ----------------------------------------------------------------------------------------------------


def watch(events, *, account: str, region: str, attempt_seconds: float) -> None:
    """Register the hooks on a boto3 session's (or client's) event system."""

    def service_of(event_name: str) -> str:
        parts = event_name.split(".")
        return parts[1] if len(parts) > 1 else "unknown"

    def before_call(context=None, **kwargs) -> None:
        if context is not None:  # one dict per call, handed to its after-call hooks too
            context["portal_started"] = time.monotonic()

    def seconds_of(context) -> float | None:
        started = (context or {}).get("portal_started")
        return time.monotonic() - started if started is not None else None

    def before_send(event_name: str = "", **kwargs) -> None:
        ensure_time_for(attempt_seconds, what=f"a call to {service_of(event_name)} in {region}")

    def needs_retry(caught_exception=None, **kwargs) -> None:
        interrupt = soft_limit_interrupt(caught_exception) if caught_exception is not None else None
        if interrupt is not None:
            raise interrupt

    def after_call(event_name: str = "", http_response=None, parsed=None, context=None, **kwargs) -> None:
        status = getattr(http_response, "status_code", 200)
        code = (parsed or {}).get("Error", {}).get("Code", "") if isinstance(parsed, dict) else ""
        service, failure = service_of(event_name), failure_of_answer(status, code)
        record(account=account, region=region, service=service, failure=failure)
        observe_aws_call(service=service, region=region, failed=bool(failure), seconds=seconds_of(context))

    def after_call_error(event_name: str = "", exception=None, context=None, **kwargs) -> None:
        if isinstance(exception, OutOfTime):
            return  # never sent: says nothing about the endpoint
        record(account=account, region=region, service=service_of(event_name), failure=failure_of(exception))
        observe_aws_call(service=service_of(event_name), region=region, failed=True, seconds=seconds_of(context))

    events.register("before-call", before_call)
    events.register("before-send", before_send)
    events.register("needs-retry", needs_retry)
    events.register("after-call", after_call)
    events.register("after-call-error", after_call_error)
