"""What every portal process counts, and how the processes share the counts.

prometheus_client does the counting, the exposition and the multiprocess aggregation. With PROMETHEUS_MULTIPROC_DIR
set (the image sets it; docker-compose mounts one volume there in web, worker, poller and beat), every process
writes its counts to files of its own in that folder and /metrics sums all of them, so gunicorn's workers and
Celery's pool processes, in any container, add up to one figure. Unset (`make run`, the tests), each process counts
in memory and /metrics shows the process that answers.

Two rules keep the folder right:
- A file is named by its process: the host name and the pid. Each container numbers its processes from 1, so the pid
  alone would make gunicorn's worker 7 and Celery's child 7 write the same file.
- Every metric here has labels: prometheus_client creates a labelled metric's file only when it first counts, so a
  short-lived process that counts nothing (the compose health check runs `manage.py workerhealth` every 30 s)
  leaves no file behind (tests/metrics/test_multiprocess.py).
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

from prometheus_client import Counter, Histogram, disable_created_metrics, values

MULTIPROCESS_DIR = os.environ.get("PROMETHEUS_MULTIPROC_DIR", "")
_HOST = socket.gethostname()


def process_identifier() -> str:
    """This process, unique among every container sharing the folder (prometheus_client names its files by it)."""
    return f"{_HOST}-{os.getpid()}"


# No `_created` series beside each counter: Prometheus would store each as one more series; multiprocess mode has none.
disable_created_metrics()
if MULTIPROCESS_DIR:
    # Before any metric below exists: every value prometheus_client makes from here on is a file named by it.
    values.ValueClass = values.MultiProcessValue(process_identifier)
    # Made here, so a process started without a container's entry point (a manage.py command) counts too.
    Path(MULTIPROCESS_DIR).mkdir(parents=True, exist_ok=True)


def clear_own_files(directory: str = MULTIPROCESS_DIR) -> int:
    """Remove the files an earlier run of this container left (a restarted container keeps its host name, and its new
    processes would otherwise reuse its old pids' files). Called once as a container's main process starts (gunicorn's
    master, a Celery worker or beat), before it forks; other containers' files are theirs and never touched."""
    if not directory:
        return 0
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    removed = 0
    for path in folder.glob("*.db"):
        # <kind>_<host>-<pid>.db, <kind> being counter, histogram, summary or gauge_<mode>.
        kind, _, rest = path.stem.partition("_")
        if kind == "gauge":
            rest = rest.partition("_")[2]
        if rest.rpartition("-")[0] == _HOST:
            path.unlink(missing_ok=True)
            removed += 1
    return removed


def process_exited(pid: int, directory: str = MULTIPROCESS_DIR) -> None:
    """A worker process of this container exited (gunicorn's child_exit): its live gauges go. Its counters stay, so
    the sums never go back."""
    if directory:
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(f"{_HOST}-{pid}", directory)


# --- Requests -----------------------------------------------------------------------------------------------------

# Page and API answers: most within 50 ms, a heavy report in seconds; the top buckets catch the slow.
REQUEST_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
http_requests = Counter(
    "portal_http_requests",
    "Requests answered, by the URL route's name (never the path), method and status.",
    ["view", "method", "status"],
)
http_request_duration = Histogram(
    "portal_http_request_duration_seconds",
    "Time to answer a request, by the URL route's name and method.",
    ["view", "method"],
    buckets=REQUEST_BUCKETS,
)

# --- Celery tasks -------------------------------------------------------------------------------------------------

# A heartbeat takes milliseconds, a poll batch up to 30 s, provisioning up to CLUSTER_TASK_TIME_LIMIT (300 s).
TASK_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)
celery_tasks = Counter(
    "portal_celery_tasks",
    "Celery tasks finished, by task, queue and outcome (success, failure, retry, time_limit, worker_lost, revoked…).",
    ["task", "queue", "outcome"],
)
celery_task_duration = Histogram(
    "portal_celery_task_duration_seconds",
    "Time a Celery task ran (not counting its wait in the queue), by task and queue.",
    ["task", "queue"],
    buckets=TASK_BUCKETS,
)

# --- AWS calls ----------------------------------------------------------------------------------------------------

# One call, botocore's retries included: a control-plane answer in well under a second, a poll's limit 14 s, a
# provisioning call's 1 min (portal.cloud.session.worst_case_seconds).
AWS_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80)
aws_calls = Counter(
    "portal_aws_calls",
    "AWS API calls, after botocore's retries, by service, region and outcome (ok, failed: a timeout, no connection, "
    "a 5xx or throttling; a 4xx about the request is ok: the endpoint answered).",
    ["service", "region", "outcome"],
)
aws_call_duration = Histogram(
    "portal_aws_call_duration_seconds",
    "Time an AWS API call took, botocore's retries included, by service and region.",
    ["service", "region"],
    buckets=AWS_BUCKETS,
)

# --- What clusters report -----------------------------------------------------------------------------------------

ingest_requests = Counter(
    "portal_ingest_requests",
    "Reports posted to the ingest endpoints, by endpoint (route name) and outcome (accepted, refused).",
    ["endpoint", "outcome"],
)
ingest_bytes = Counter(
    "portal_ingest_bytes",
    "Bytes of the reports posted to the ingest endpoints (their Content-Length), by endpoint and outcome.",
    ["endpoint", "outcome"],
)
ingest_items = Counter(
    "portal_ingest_items",
    "What the accepted reports carried, by endpoint: jobs, exporter readings, nccl-tests runs, progress points.",
    ["endpoint"],
)


def observe_request(*, view: str, method: str, status: int, seconds: float) -> None:
    http_requests.labels(view, method, str(status)).inc()
    http_request_duration.labels(view, method).observe(seconds)


def count_task(*, task: str, queue: str, outcome: str, seconds: float | None = None) -> None:
    celery_tasks.labels(task, queue, outcome).inc()
    if seconds is not None:
        celery_task_duration.labels(task, queue).observe(seconds)


def observe_aws_call(*, service: str, region: str, failed: bool, seconds: float | None) -> None:
    aws_calls.labels(service, region or "unknown", "failed" if failed else "ok").inc()
    if seconds is not None:
        aws_call_duration.labels(service, region or "unknown").observe(seconds)


def count_ingest(*, endpoint: str, accepted: bool, size: int, items: int) -> None:
    outcome = "accepted" if accepted else "refused"
    ingest_requests.labels(endpoint, outcome).inc()
    ingest_bytes.labels(endpoint, outcome).inc(max(size, 0))
    if accepted and items:
        ingest_items.labels(endpoint).inc(items)
