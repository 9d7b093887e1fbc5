"""A real Prometheus for tests, serving series the test writes.

The series go into an OpenMetrics file, `promtool tsdb create-blocks-from openmetrics` turns that into TSDB
blocks, and `prometheus` serves them on a free port of 127.0.0.1 (about 0.1 s from start to ready).
Import the `prometheus` fixture into a conftest.py or test module that needs it.
"""

from __future__ import annotations

import math
import os
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest

# (metric name, labels, [(aware datetime, value), ...]), optionally followed by a type: "gauge" (the
# default) or "counter". The type is only declared in the file: Prometheus stores and queries both alike.
Series = tuple[str, Mapping[str, str], Sequence[tuple[datetime, float]]] | tuple[str, Mapping, Sequence, str]
START_TIMEOUT = 15.0  # seconds; a start takes about 0.1 s, so this is only hit when something is wrong


@dataclass
class PrometheusServer:
    url: str  # http://127.0.0.1:<port>
    process: subprocess.Popen
    directory: Path  # the OpenMetrics file, the TSDB and prometheus.log

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


class PrometheusFactory:
    """`prometheus(series)` starts a Prometheus holding exactly `series` and returns a PrometheusServer.

    Mind Prometheus's lookback (staleness) window of 5 minutes: an instant query at time T returns, per series,
    the latest sample in [T - 5 min, T] (both ends included in 2.42); a series with no sample in that window is
    absent from the result, not 0.
    Write each sample at most a few minutes before the time the test queries, and write samples in the past
    (Prometheus keeps them because the fixture starts it with a 100-year retention).
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.servers: list[PrometheusServer] = []

    def __call__(self, series: Iterable[Series]) -> PrometheusServer:
        directory = self.directory / f"server-{len(self.servers)}"
        tsdb = directory / "tsdb"
        tsdb.mkdir(parents=True)
        source = directory / "series.om"
        source.write_text(openmetrics(series))
        built = subprocess.run(
            ["promtool", "tsdb", "create-blocks-from", "openmetrics", str(source), str(tsdb)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        if built.returncode:
            raise RuntimeError(f"promtool could not build a TSDB from {source}:\n{built.stderr}{built.stdout}")
        port = free_port()
        log = (directory / "prometheus.log").open("w")
        process = subprocess.Popen(
            [
                "prometheus",
                f"--storage.tsdb.path={tsdb}",
                "--storage.tsdb.retention.time=100y",  # the default 15 days would drop blocks of older samples
                "--config.file=/dev/null",  # no scrape jobs: the written blocks are the only data
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()  # the child holds its own copy
        server = PrometheusServer(url=f"http://127.0.0.1:{port}", process=process, directory=directory)
        self.servers.append(server)
        wait_until_ready(server)
        return server

    def stop_all(self) -> None:
        for server in self.servers:
            server.stop()


def openmetrics(series: Iterable[Series]) -> str:
    """The OpenMetrics text of `series`: one TYPE line per name, timestamps in seconds, ending with `# EOF`."""
    families: dict[str, tuple[str, list[str]]] = {}
    for name, labels, samples, *kind in series:
        metric_type = kind[0] if kind else "gauge"
        declared, lines = families.setdefault(name, (metric_type, []))
        if declared != metric_type:
            raise ValueError(f"{name} is written both as a {declared} and as a {metric_type}")
        label_text = ",".join(f'{key}="{_escape(str(value))}"' for key, value in labels.items())
        for at, value in sorted(samples, key=lambda sample: sample[0]):
            if at.utcoffset() is None:
                raise ValueError(f"{name}: sample times must be timezone-aware, got {at!r}")
            lines.append(f"{name}{{{label_text}}} {_number(value)} {at.timestamp():.3f}")
    # OpenMetrics wants each family's samples together, under its TYPE line.
    out = []
    for name, (kind, lines) in families.items():
        out += [f"# TYPE {name} {kind}", *lines]
    return "\n".join([*out, "# EOF"]) + "\n"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(value: float) -> str:
    value = float(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(value)


def free_port() -> int:
    """A port nothing listens on right now (the OS picks it; another process could take it before we bind)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until_ready(server: PrometheusServer) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            log = (server.directory / "prometheus.log").read_text()[-2000:]
            raise RuntimeError(f"prometheus exited with {server.process.returncode} before it was ready:\n{log}")
        try:
            with urllib.request.urlopen(f"{server.url}/-/ready", timeout=1) as response:
                if response.status == 200:
                    return
        except OSError:
            pass  # not listening yet, or 503 while the TSDB loads
        time.sleep(0.02)
    server.stop()
    raise RuntimeError(f"prometheus at {server.url} was not ready after {START_TIMEOUT} s")


@pytest.fixture
def prometheus(tmp_path_factory):
    """A PrometheusFactory: `server = prometheus([(name, labels, [(at, value), ...]), ...])`; see its docstring."""
    missing = [tool for tool in ("promtool", "prometheus") if not shutil.which(tool)]
    if missing:
        message = f"{' and '.join(missing)} not on PATH: apt-get install prometheus (Debian's package has both)"
        if os.environ.get("CI"):
            pytest.fail(message)  # CI must run the Prometheus tests, never skip them
        pytest.skip(message)
    factory = PrometheusFactory(tmp_path_factory.mktemp("prometheus"))
    yield factory
    factory.stop_all()
