"""The head-node reporter: old-Python syntax, stdlib only, and whole runs against stub HTTP servers.

The script runs as a subprocess, as cron would run it, with fake `sacct` and `sinfo` first on PATH.
"""

from __future__ import annotations

import ast
import glob
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import urllib.error
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.environment import unavailable
from workloads.jobs.sacct import SACCT_FIELDS
from workloads.reporting import fmp_reporter

SCRIPT = Path(fmp_reporter.__file__)
SAMPLES = Path(__file__).parent.parent / "samples"
TOKEN = "fmc_a1b2c3d4SECRETPARTNEVERSHOWN"
CLUSTER = "7"
SACCT_OUTPUT = "\n".join(
    [
        "|".join(SACCT_FIELDS),
        "1001|pretrain-8b|alice|sakura|p5|COMPLETED|2026-11-20T09:15:02|2026-11-20T09:16:00|2026-11-20T11:16:00"
        "|7200|2|p5-[1-2]|billing=384,cpu=384,gres/gpu=16,node=2",
        "1002|eval|bob|sakura|p5|PENDING|2026-11-20T12:00:00|Unknown|Unknown|0|1|None assigned|",
        "",
    ]
)
SINFO_OUTPUT = "p5-1|p5-1|127.0.0.1\np5-2|p5-2|127.0.0.2\np5-1|p5-1|127.0.0.1\n"  # p5-1 is in two partitions
PARTITIONS_OUTPUT = "PartitionName=p5 AllowGroups=ALL Default=YES Nodes=p5-[1-2] OverSubscribe=EXCLUSIVE State=UP\n"
JOBS_ANSWER = {"received": 2, "created": 1, "updated": 1, "unchanged": 0}


# -- Stub servers --------------------------------------------------------------------------------------------


class Stub:
    """An HTTP server on 127.0.0.1 in a thread: records POSTs, answers them from `replies` in order
    (then 200 `JOBS_ANSWER`), and serves `page` to any GET."""

    def __init__(self, page: str = "") -> None:
        self.requests: list[dict] = []
        self.replies: list[tuple[int, dict]] = []
        self.page = page
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                raw = self.rfile.read(int(self.headers["Content-Length"]))
                stub.requests.append({"path": self.path, "headers": dict(self.headers), "body": json.loads(raw)})
                status, answer = stub.replies.pop(0) if stub.replies else (200, JOBS_ANSWER)
                self._send(status, json.dumps(answer).encode(), "application/json")

            def do_GET(self):
                self._send(200, stub.page.encode(), "text/plain; version=0.0.4")

            def _send(self, status, data, content_type):
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def portal():
    stub = Stub()
    yield stub
    stub.close()


@pytest.fixture
def exporter():
    stub = Stub(page=(SAMPLES / "dcgm_exporter_metrics_h100.txt").read_text())
    yield stub
    stub.close()


# -- The head node: fake Slurm commands, token, environment ---------------------------------------------------


@pytest.fixture
def node(tmp_path, portal):
    """A head node in tmp_path: fake sacct (which fails unless TZ=UTC) and sinfo, the token, the env."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (tmp_path / "sacct.out").write_text(SACCT_OUTPUT)
    (tmp_path / "sinfo.out").write_text(SINFO_OUTPUT)
    fake(
        bin_dir / "sacct",
        f'[ "$TZ" = UTC ] || {{ echo "sacct: TZ is $TZ, not UTC" >&2; exit 1; }}\n'
        f'printf "%s\\n" "$@" > {tmp_path}/sacct.args\ncat {tmp_path}/sacct.out',
    )
    fake(bin_dir / "sinfo", f'printf "%s\\n" "$@" > {tmp_path}/sinfo.args\ncat {tmp_path}/sinfo.out')
    (tmp_path / "scontrol.out").write_text(PARTITIONS_OUTPUT)
    fake(bin_dir / "scontrol", f'printf "%s\\n" "$@" > {tmp_path}/scontrol.args\ncat {tmp_path}/scontrol.out')
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    token_file.chmod(0o600)
    env = {key: value for key, value in os.environ.items() if not key.startswith("FMP_") and "proxy" not in key.lower()}
    env.update(
        PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', os.defpath)}",
        TZ="Asia/Tokyo",  # the script must override it for sacct
        FMP_PORTAL_URL=portal.url,
        FMP_CLUSTER_ID=CLUSTER,
        FMP_TOKEN_FILE=str(token_file),
        FMP_ENV_FILE=str(tmp_path / "no-such-env-file"),
        FMP_RETRY_BASE_SECONDS="0.01",
    )
    return type("Node", (), {"dir": tmp_path, "bin": bin_dir, "env": env, "token_file": token_file})


def fake(path: Path, body: str) -> None:
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)


def run(node, *args, python=sys.executable, stdin=None, **env) -> subprocess.CompletedProcess:
    return subprocess.run(
        [python, str(SCRIPT), *args],
        env={**node.env, **env},
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# -- The source itself ---------------------------------------------------------------------------------------


def test_the_script_is_python_37_syntax_and_imports_only_the_standard_library():
    tree = ast.parse(SCRIPT.read_text(), feature_version=(3, 7))
    imported = set()
    for item in ast.walk(tree):
        if isinstance(item, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in item.names}
        elif isinstance(item, ast.ImportFrom):
            assert item.level == 0, "a relative import would tie the script to the portal's package"
            imported.add(item.module.split(".")[0])
    assert imported, "no imports found: the check is not looking"
    assert imported <= sys.stdlib_module_names, imported - sys.stdlib_module_names


def test_its_sacct_fields_are_the_portal_parsers():
    assert list(fmp_reporter.SACCT_FIELDS) == list(SACCT_FIELDS)


def test_the_install_guide_holds_the_units_and_lines_to_copy():
    guide = fmp_reporter.__doc__
    for line in [
        "sudo install -m 600 -o fmp-reporter /dev/stdin /etc/fmp-reporter/token",
        "*/5 * * * * fmp-reporter /usr/bin/python3 /opt/fmp-reporter/fmp_reporter.py run 2>&1 | logger -t fmp-reporter",
        "Type=oneshot",
        "EnvironmentFile=/etc/fmp-reporter/env",
        "OnBootSec=2min",
        "OnUnitActiveSec=5min",
        "FMP_INTERVAL=300",
        "sudo python3 /opt/fmp-reporter/fmp_reporter.py nccl nccl-2node.log --nodes 2",
    ]:
        assert line in guide.splitlines(), line  # whole lines at the margin: they paste as they are
    assert fmp_reporter.DEFAULT_INTERVAL == 300  # cron's */5 and the timer's 5min


# -- Pure pieces ---------------------------------------------------------------------------------------------


def test_node_addresses_are_deduplicated_and_fall_back_to_the_hostname_then_the_name():
    sinfo = "a|a-host|10.0.0.1\nb|b-host|\nc||N/A\na|a-host|10.0.0.1\n\n"
    assert fmp_reporter.node_addresses(sinfo) == [("a", "10.0.0.1"), ("b", "b-host"), ("c", "c")]
    assert fmp_reporter.exporter_url("fd00::1", 9400) == "http://[fd00::1]:9400/metrics"


def test_the_sacct_command_asks_for_the_fields_in_order():
    command = fmp_reporter.sacct_command(3)
    assert command == ["sacct", "-a", "-X", "-P", "--format=" + ",".join(SACCT_FIELDS), "--starttime", "now-3days"]


def test_field_errors_read_as_one_line():
    message = fmp_reporter.portal_message(400, b'{"log": ["No all_reduce_perf table found."], "nodes": ["Too big."]}')
    assert message == "refused by the portal (HTTP 400): log: No all_reduce_perf table found.; nodes: Too big."


def test_the_env_file_is_read_like_systemds(tmp_path):
    env_file = tmp_path / "env"
    env_file.write_text("# settings\nFMP_PORTAL_URL='https://p.example'\nexport FMP_CLUSTER_ID=42\nOTHER=1\nnoise\n")
    assert fmp_reporter.load_env_file(str(env_file)) == {"FMP_PORTAL_URL": "https://p.example", "FMP_CLUSTER_ID": "42"}


class Answer:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def read(self):
        return self.data

    def getcode(self):
        return 200


def scripted_opener(outcomes):
    """An opener that raises or answers each outcome in turn, recording the requests it got."""
    calls = []

    def opener(request, timeout):
        calls.append(request)
        outcome = outcomes[len(calls) - 1]
        if isinstance(outcome, int):
            raise urllib.error.HTTPError(request.full_url, outcome, "", {}, io.BytesIO(b'{"detail": "no"}'))
        if isinstance(outcome, Exception):
            raise outcome
        return Answer(outcome)

    return opener, calls


def post(opener, sleeps):
    return fmp_reporter.post_json(
        "https://p.example/x/", {"a": 1}, token=TOKEN, opener=opener, sleep=sleeps.append, base_delay=2.0
    )


def test_transient_failures_are_retried_with_exponential_backoff():
    opener, calls = scripted_opener([urllib.error.URLError(ConnectionRefusedError()), 503, b'{"received": 1}'])
    sleeps = []
    assert post(opener, sleeps) == {"received": 1}
    assert sleeps == [2.0, 4.0]
    assert calls[0].get_header("Authorization") == "Token " + TOKEN
    assert calls[0].get_header("User-agent") == "fmp-reporter/" + fmp_reporter.VERSION
    assert json.loads(calls[0].data) == {"a": 1}


def test_out_of_attempts_is_unavailable():
    opener, calls = scripted_opener([429, 500, TimeoutError("timed out")])
    sleeps = []
    with pytest.raises(fmp_reporter.Unavailable, match="after 3 attempts: timed out"):
        post(opener, sleeps)
    assert len(calls) == 3 and sleeps == [2.0, 4.0]


@pytest.mark.parametrize("status", [400, 401, 404, 413])
def test_a_refusal_is_not_retried(status):
    opener, calls = scripted_opener([status, b"{}"])
    sleeps = []
    with pytest.raises(fmp_reporter.Refused, match=f"HTTP {status}.*: no$") as refused:
        post(opener, sleeps)
    assert refused.value.status == status and len(calls) == 1 and sleeps == []


# -- Whole runs ----------------------------------------------------------------------------------------------


def test_jobs_posts_sacct_and_sinfo_output_with_the_token(node, portal):
    result = run(node, "--interval", "600", "jobs")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "jobs: 2 received, 1 new, 1 updated, 0 unchanged\n"
    [request] = portal.requests
    assert request["path"] == f"/api/v1/clusters/{CLUSTER}/jobs/ingest/"
    assert request["headers"]["Authorization"] == "Token " + TOKEN
    assert request["headers"]["Content-Type"] == "application/json"
    assert request["headers"]["User-Agent"] == "fmp-reporter/" + fmp_reporter.VERSION
    assert request["body"] == {
        "sacct": SACCT_OUTPUT,
        "slurm_nodes": SINFO_OUTPUT,
        "slurm_partitions": PARTITIONS_OUTPUT,
        "timezone": "UTC",
        "interval_seconds": 600,
    }
    sacct_args = (node.dir / "sacct.args").read_text().splitlines()
    assert sacct_args == fmp_reporter.sacct_command(2)[1:]
    assert (node.dir / "sinfo.args").read_text().splitlines() == ["-h", "-N", "-o", "%N|%n|%o"]
    assert (node.dir / "scontrol.args").read_text().splitlines() == ["show", "partition", "-o"]


def test_jobs_are_posted_without_partitions_when_scontrol_fails(node, portal):
    """The portal then keeps the partitions the last report gave: the jobs still count."""
    fake(node.bin / "scontrol", 'echo "slurm_load_partitions error: Unable to contact slurm controller" >&2; exit 1')
    result = run(node, "jobs")
    assert result.returncode == 0, result.stderr
    assert "partitions not sent: scontrol exited with status 1: slurm_load_partitions error" in result.stderr
    [request] = portal.requests
    assert "slurm_partitions" not in request["body"] and request["body"]["sacct"] == SACCT_OUTPUT


def old_python() -> str:
    """A Python 3.7, the oldest the scripts promise (Amazon Linux 2's python3, on HyperPod's and ParallelCluster's
    head nodes): FMP_OLD_PYTHON, python3.7 on PATH, or pyenv's (this machine's image has 3.7.16 there). Neither
    Debian 12 nor PyPI ships one; missing, the test skips, and fails in CI (tests.environment)."""
    roots = {os.environ.get("PYENV_ROOT") or "", os.path.expanduser("~/.pyenv")} - {""}
    candidates = [os.environ.get("FMP_OLD_PYTHON"), shutil.which("python3.7")]
    for root in sorted(roots):
        candidates += sorted(glob.glob(f"{root}/versions/3.7.*/bin/python3"))
    for candidate in filter(None, candidates):
        probe = subprocess.run([candidate, "-c", "import sys; print(sys.version_info[:2])"], capture_output=True)
        if probe.returncode == 0 and probe.stdout.strip() == b"(3, 7)":
            return candidate
    unavailable("no Python 3.7 here (set FMP_OLD_PYTHON to one, or `pyenv install 3.7`)")


def test_jobs_runs_under_the_python_of_amazon_linux_2(node, portal):
    python = old_python()
    result = run(node, "jobs", python=python, FMP_INTERVAL="300")
    assert result.returncode == 0, result.stderr
    assert portal.requests[0]["body"]["interval_seconds"] == 300
    assert run(node, "--dry-run", "nccl", str(SAMPLES / "nccl_all_reduce_p5_2node.txt"), python=python).returncode == 0


def test_not_this_clusters_token_is_refused_with_the_portals_message(node, portal):
    portal.replies = [(404, {"detail": "Not found."})]
    result = run(node, "jobs")
    assert result.returncode == 1
    assert "HTTP 404: no such cluster, or the token belongs to another cluster): Not found." in result.stderr
    assert len(portal.requests) == 1  # never retried


def test_a_bad_line_is_refused_and_named(node, portal):
    portal.replies = [(400, {"detail": "line 3: State 'DONE' is not a Slurm job state"})]
    result = run(node, "jobs")
    assert result.returncode == 1
    assert result.stderr.strip() == (
        "fmp-reporter: jobs: refused by the portal (HTTP 400): line 3: State 'DONE' is not a Slurm job state"
    )


def test_a_portal_that_is_down_for_a_moment_is_retried(node, portal):
    portal.replies = [(503, {"detail": "Service unavailable"})]
    result = run(node, "jobs")
    assert result.returncode == 0, result.stderr
    assert len(portal.requests) == 2
    assert result.stdout.startswith("jobs: 2 received")


def test_nothing_listening_exits_2_after_the_retries(node):
    result = run(node, "jobs", FMP_PORTAL_URL=f"http://127.0.0.1:{free_port()}")
    assert result.returncode == 2
    assert "the portal did not answer after 3 attempts" in result.stderr


def test_dry_run_sends_nothing_and_never_shows_the_whole_token(node, portal):
    result = run(node, "--dry-run", "--verbose", "jobs")
    assert result.returncode == 0, result.stderr
    assert portal.requests == []
    assert f"POST {portal.url}/api/v1/clusters/{CLUSTER}/jobs/ingest/" in result.stdout
    assert "Token " + TOKEN[:12] + "..." in result.stdout
    assert "interval_seconds: 300" in result.stdout and 'timezone: "UTC"' in result.stdout
    assert "JobID|JobName|User" in result.stdout  # the first lines of sacct's output
    assert "SECRETPART" not in result.stdout + result.stderr


def test_verbose_never_shows_the_whole_token(node, portal):
    result = run(node, "--verbose", "jobs")
    assert result.returncode == 0, result.stderr
    assert TOKEN[:12] in result.stderr and "SECRETPART" not in result.stdout + result.stderr


def test_nccl_posts_the_log_file(node, portal):
    portal.replies = [(201, {"id": 5})]
    log = SAMPLES / "nccl_all_reduce_p5_2node.txt"
    result = run(node, "nccl", str(log), "--nodes", "2")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "nccl: nccl_all_reduce_p5_2node.txt posted (2 nodes)\n"
    [request] = portal.requests
    assert request["path"] == f"/api/v1/clusters/{CLUSTER}/nccl-tests/"
    assert request["body"] == {"log": log.read_text(), "nodes": 2}


def test_nccl_names_the_collective_of_a_log_that_does_not(node, portal):
    portal.replies = [(201, {"id": 6})]
    log = SAMPLES / "nccl_all_reduce_p5_2node.txt"
    result = run(node, "nccl", str(log), "--nodes", "2", "--collective", "reduce_scatter")
    assert result.returncode == 0, result.stderr
    assert portal.requests[0]["body"] == {"log": log.read_text(), "nodes": 2, "collective": "reduce_scatter"}


def test_nccl_reads_standard_input_and_leaves_nodes_out(node, portal):
    portal.replies = [(400, {"log": ["No all_reduce_perf table found."]})]
    result = run(node, "nccl", "-", stdin="hello\n")
    assert result.returncode == 1
    assert portal.requests[0]["body"] == {"log": "hello\n"}
    assert "log: No all_reduce_perf table found." in result.stderr


def test_dcgm_posts_each_answering_node_and_skips_the_silent_one(node, portal, exporter):
    result = run(node, "dcgm", "--port", str(exporter.port))
    assert result.returncode == 0, result.stderr
    [request] = portal.requests  # p5-1 once, though sinfo listed it twice; p5-2 did not answer
    assert request["path"] == f"/api/v1/clusters/{CLUSTER}/health/ingest/"
    assert request["body"] == {"metrics": exporter.page, "host": "p5-1"}
    assert f"dcgm: p5-2: no answer from http://127.0.0.2:{exporter.port}/metrics" in result.stderr
    assert result.stdout.splitlines()[-1] == "dcgm: 1 of 2 nodes posted"


def test_run_posts_jobs_then_gpu_health_when_a_dcgm_port_is_set(node, portal, exporter):
    result = run(node, "run", FMP_DCGM_PORT=str(exporter.port))
    assert result.returncode == 0, result.stderr
    assert [r["path"].rsplit("/", 3)[-3] for r in portal.requests] == ["jobs", "health"]
    assert len(run(node, "run").stdout.splitlines()) == 1  # no port: jobs only


def test_no_sacct_exits_2_in_one_line(node, portal):
    (node.bin / "sacct").unlink()
    if shutil.which("sacct", path=os.pathsep.join([node.env["PATH"], *fmp_reporter.SLURM_BIN_DIRS])):
        unavailable("this machine has a real sacct (Slurm installed): the script would find it")
    result = run(node, "jobs")
    assert result.returncode == 2
    assert result.stderr.startswith("fmp-reporter: jobs: sacct not found") and result.stderr.count("\n") == 1
    assert portal.requests == []


def test_a_failing_sacct_exits_2_with_what_it_said(node, portal):
    fake(node.bin / "sacct", 'echo "sacct: error: Problem talking to the database: Connection refused" >&2; exit 1')
    result = run(node, "jobs")
    assert result.returncode == 2
    assert "sacct exited with status 1: sacct: error: Problem talking to the database" in result.stderr
    assert portal.requests == []


def test_an_empty_token_file_exits_2(node, portal):
    node.token_file.write_text("\n")
    result = run(node, "jobs")
    assert result.returncode == 2
    assert "is empty" in result.stderr and portal.requests == []
