"""Several processes, one figure: gunicorn's workers and Celery's prefork pool each write their counts to the shared
multiprocess folder (prometheus_client's multiprocess mode), and /metrics sums them, as in docker-compose.

Real servers: gunicorn with two workers and the portal's gunicorn.conf.py, and a Celery worker with two pool
processes, all writing to one folder. A process that counts nothing writes nothing there.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from celery import Celery
from django.conf import settings
from prometheus_client import CollectorRegistry
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.parser import text_string_to_metric_families

from portal.metrics import registry
from tests.servers import free_port

ROOT = Path(settings.BASE_DIR)
BIN = Path(sys.executable).parent
TOKEN = "m" * 40
HOST = socket.gethostname()


def portal_env(tmp_path: Path, metrics_dir: Path) -> dict[str, str]:
    """The embedded defaults in a folder of the test's own (SQLite, the filesystem broker), counting into
    metrics_dir."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL", "CELERY_TASK_ALWAYS_EAGER"}
    }
    var = tmp_path / "var"
    var.mkdir(exist_ok=True)
    metrics_dir.mkdir(exist_ok=True)
    return env | {
        "PORTAL_VAR_DIR": str(var),
        "PROMETHEUS_MULTIPROC_DIR": str(metrics_dir),
        "METRICS_TOKEN": TOKEN,
        "DJANGO_SETTINGS_MODULE": "portal.settings",
        "PYTHONPATH": str(ROOT),
    }


def summed(metrics_dir: Path, name: str, **labels) -> float:
    """What /metrics would say, read straight from the folder."""
    collected = CollectorRegistry()
    MultiProcessCollector(collected, path=str(metrics_dir))
    return collected.get_sample_value(name, labels) or 0.0


def process_files(metrics_dir: Path, kind: str) -> set[str]:
    return {path.stem.partition("_")[2] for path in metrics_dir.glob(f"{kind}_*.db")}


# --- gunicorn ---------------------------------------------------------------------------------------------------------


class Gunicorn:
    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.port = free_port()
        command = [
            str(BIN / "gunicorn"),
            "portal.wsgi:application",
            "--config",
            "portal/gunicorn.conf.py",
            "--bind",
            f"127.0.0.1:{self.port}",
            "--workers",
            "2",
        ]
        with log.open("ab") as output:
            self.process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=output, stderr=subprocess.STDOUT)
        self.log = log
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert self.process.poll() is None, log.read_text()[-3000:]
            try:
                self.get("/no-such-page/", count=False)
                return
            except OSError:
                time.sleep(0.1)
        self.stop()
        pytest.fail(f"gunicorn did not answer:\n{log.read_text()[-3000:]}")

    def get(self, path: str, headers: dict | None = None, *, count: bool = True) -> tuple[int, bytes]:
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()

    def scrape(self, name: str, **labels) -> float:
        status, body = self.get("/metrics", {"Authorization": f"Bearer {TOKEN}"})
        assert status == 200, body[:1000]
        return sum(
            sample.value
            for family in text_string_to_metric_families(body.decode())
            for sample in family.samples
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items())
        )

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def test_gunicorn_workers_add_up_in_every_scrape_and_a_restart_clears_only_its_own_files(tmp_path):
    metrics_dir = tmp_path / "metrics"
    env = portal_env(tmp_path, metrics_dir)
    log = tmp_path / "gunicorn.log"
    unmatched = {"view": "unmatched", "method": "GET", "status": "404"}

    first = Gunicorn(env, log)
    try:
        before = first.scrape("portal_http_requests_total", **unmatched)  # gunicorn's readiness probes
        with ThreadPoolExecutor(max_workers=8) as pool:  # concurrent, so both workers take requests
            statuses = list(pool.map(lambda n: first.get(f"/no-such-page/{n}/")[0], range(120)))
        assert set(statuses) == {404}
        served_by = process_files(metrics_dir, "counter")
        assert len(served_by) >= 2, served_by  # gunicorn's two workers, each with its own file
        # Whichever worker answers the scrape, it sums both: every scrape sees all 120.
        assert [first.scrape("portal_http_requests_total", **unmatched) for _ in range(6)] == [before + 120] * 6
    finally:
        first.stop()
    assert summed(metrics_dir, "portal_http_requests_total", **unmatched) == before + 120

    # Another container's file in the shared folder (its host name differs): kept, and summed.
    own = sorted(metrics_dir.glob(f"counter_{HOST}-*.db"))[0]
    theirs = metrics_dir / "counter_another-container-7.db"
    theirs.write_bytes(own.read_bytes())
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / theirs.name).write_bytes(theirs.read_bytes())
    carried = summed(alone, "portal_http_requests_total", **unmatched)
    assert 0 < carried < before + 120

    second = Gunicorn(env, log)  # on_starting: this host's files from the first run go
    try:
        probes = second.scrape("portal_http_requests_total", **unmatched) - carried
        assert 1 <= probes <= 3  # this run's readiness probe: the first run's 120 are gone
        for n in range(10):
            assert second.get(f"/no-such-page/{n}/")[0] == 404
        assert second.scrape("portal_http_requests_total", **unmatched) == carried + probes + 10
    finally:
        second.stop()


# --- Celery -----------------------------------------------------------------------------------------------------------


def test_a_prefork_worker_s_pool_processes_add_up(tmp_path, monkeypatch):
    monkeypatch.delenv("CELERY_BROKER_URL", raising=False)  # Celery's own override of any app's broker
    metrics_dir = tmp_path / "metrics"
    env = portal_env(tmp_path, metrics_dir)
    broker = Path(env["PORTAL_VAR_DIR"]) / "broker"
    folders = {"queue": broker / "queue", "processed": broker / "processed", "control": broker / "control"}
    for folder in folders.values():
        folder.mkdir(parents=True, exist_ok=True)
    log = tmp_path / "worker.log"
    command = [str(BIN / "celery"), "-A", "portal", "worker", "--pool=prefork", "--concurrency=2", "--queues=celery"]
    command += ["--hostname=metrics@%h", "--without-heartbeat", "--without-mingle", "--without-gossip"]
    with log.open("wb") as output:
        worker = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True
        )
    sender = Celery("sender", broker="filesystem://localhost/")
    sender.conf.broker_transport_options = {
        "data_folder_in": str(folders["queue"]),
        "data_folder_out": str(folders["queue"]),
        "processed_folder": str(folders["processed"]),
        "control_folder": str(folders["control"]),
        "store_processed": False,
    }
    tasks = 20
    labels = {"task": "celery.accumulate", "queue": "celery", "outcome": "success"}
    try:
        for n in range(tasks):
            sender.send_task("celery.accumulate", args=[n], queue="celery", routing_key="celery")
        deadline = time.monotonic() + 60
        while summed(metrics_dir, "portal_celery_tasks_total", **labels) < tasks and time.monotonic() < deadline:
            assert worker.poll() is None, log.read_text()[-3000:]
            time.sleep(0.2)
    finally:
        # Its own process group, the pool processes with it: what they counted is in the files already.
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait()
    assert summed(metrics_dir, "portal_celery_tasks_total", **labels) == tasks, log.read_text()[-3000:]
    timed = {"task": "celery.accumulate", "queue": "celery"}
    assert summed(metrics_dir, "portal_celery_task_duration_seconds_count", **timed) == tasks
    assert process_files(metrics_dir, "counter")  # written by the pool processes, named by host and pid


# --- Processes that count nothing -------------------------------------------------------------------------------------


def test_a_process_that_counts_nothing_leaves_no_file(tmp_path):
    """The compose health check runs manage.py every 30 s in each worker's container: with a file per run the shared
    folder would grow without end. Every metric has labels, so none is made until something is counted."""
    metrics_dir = tmp_path / "metrics"
    metrics_dir.mkdir()
    env = portal_env(tmp_path, metrics_dir)
    done = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert not list(metrics_dir.iterdir())


def test_a_container_clears_only_its_own_files(tmp_path):
    for name in (f"counter_{HOST}-12.db", f"histogram_{HOST}-12.db", "counter_web2-12.db", f"counter_x{HOST}-3.db"):
        (tmp_path / name).write_bytes(b"")
    assert registry.clear_own_files(str(tmp_path)) == 2
    assert sorted(path.name for path in tmp_path.iterdir()) == ["counter_web2-12.db", f"counter_x{HOST}-3.db"]


def test_a_dead_worker_s_live_gauges_go_and_its_counters_stay(tmp_path):
    for name in (f"gauge_livesum_{HOST}-41.db", f"counter_{HOST}-41.db", f"gauge_livesum_{HOST}-42.db"):
        (tmp_path / name).write_bytes(b"")
    registry.process_exited(41, str(tmp_path))
    assert sorted(path.name for path in tmp_path.iterdir()) == [f"counter_{HOST}-41.db", f"gauge_livesum_{HOST}-42.db"]
