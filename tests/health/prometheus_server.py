"""A real Prometheus for tests, serving series the test writes.

The series go into an OpenMetrics file, `promtool tsdb create-blocks-from openmetrics` turns that into TSDB
blocks, and `prometheus` serves them on a free port of 127.0.0.1 (about 0.1 s from start to ready; starting,
waiting and stopping as tests/servers.py does for every server the tests run). Import the `prometheus` fixture into
a conftest.py or test module that needs it.
"""

from __future__ import annotations

import math
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path

import pytest

from tests.environment import unavailable
from tests.servers import Server, free_port, start

# (metric name, labels, [(aware datetime, value), ...]), optionally followed by a type: "gauge" (the
# default) or "counter". The type is only declared in the file: Prometheus stores and queries both alike.
Series = tuple[str, Mapping[str, str], Sequence[tuple[datetime, float]]] | tuple[str, Mapping, Sequence, str]


class PrometheusFactory:
    """`prometheus(series)` starts a Prometheus holding exactly `series` and returns its Server (`url`, `stop()`).

    Mind Prometheus's lookback (staleness) window of 5 minutes: an instant query at time T returns, per series,
    the latest sample in [T - 5 min, T] (both ends included in 2.42); a series with no sample in that window is
    absent from the result, not 0.
    Write each sample at most a few minutes before the time the test queries, and write samples in the past
    (Prometheus keeps them because the fixture starts it with a 100-year retention).
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.servers: list[Server] = []

    def __call__(self, series: Iterable[Series]) -> Server:
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
        server = start(
            "prometheus",
            [
                "prometheus",
                f"--storage.tsdb.path={tsdb}",
                "--storage.tsdb.retention.time=100y",  # the default 15 days would drop blocks of older samples
                "--config.file=/dev/null",  # no scrape jobs: the written blocks are the only data
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            port=port,
            ready="/-/ready",
            log=directory / "prometheus.log",
        )
        self.servers.append(server)
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


@pytest.fixture
def prometheus(tmp_path_factory):
    """A PrometheusFactory: `server = prometheus([(name, labels, [(at, value), ...]), ...])`; see its docstring."""
    missing = [tool for tool in ("promtool", "prometheus") if not shutil.which(tool)]
    if missing:
        unavailable(f"{' and '.join(missing)} not on PATH: apt-get install prometheus (Debian's package has both)")
    factory = PrometheusFactory(tmp_path_factory.mktemp("prometheus"))
    yield factory
    factory.stop_all()
