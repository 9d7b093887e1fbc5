"""`make run` as a person and a supervisor see it: scripts/run-embedded started for real (web, worker, beat and
the emulator on the embedded default, in a scratch var/), then stopped the way Ctrl-C, `docker stop` or a CI
harness stops it — a signal to its whole process group — leaving no process behind."""

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.conf import settings

from tests.servers import free_port

ROOT = Path(settings.BASE_DIR)
GRACE_SECONDS = 10  # the script's default: TERM, then KILL after this long
START_TIMEOUT = 180
DEMO_CLUSTERS = 12  # load_demo_telemetry: one live cluster per demo organization


def _group(pgid: int) -> list[str]:
    """Every process still in the process group, orphans (re-parented to PID 1) included."""
    out = subprocess.run(["ps", "-wweo", "pgid=,pid=,stat=,args="], capture_output=True, text=True, check=True).stdout
    return [line.strip() for line in out.splitlines() if line.split()[0] == str(pgid) and line.split()[2][0] != "Z"]


@dataclass
class Portal:
    process: subprocess.Popen
    url: str
    log: Path

    def get(self, path: str, **headers) -> tuple[int, dict, str]:
        request = urllib.request.Request(self.url + path, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 (a local URL)
                return response.status, dict(response.headers), response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, dict(error.headers), error.read().decode()

    def stop_with(self, signum: int) -> list[str]:
        """Signal the whole group, as a terminal's Ctrl-C or a supervisor does; what is left after the grace."""
        pgid = self.process.pid
        os.killpg(pgid, signum)
        deadline = time.monotonic() + GRACE_SECONDS + 10
        while (left := _group(pgid)) and time.monotonic() < deadline:
            time.sleep(0.5)
        return left


def _start(var_dir: Path, log: Path) -> Portal:
    port, moto_port = free_port(), free_port()
    # The embedded default whatever the test run uses (CI sets PostgreSQL and Redis for the suite itself).
    env = {name: os.environ[name] for name in ("PATH", "HOME", "LANG", "TMPDIR") if name in os.environ}
    env |= {
        "PORT": str(port),
        "MOTO_PORT": str(moto_port),
        "PORTAL_VAR_DIR": str(var_dir),
        "BIN": str(Path(sys.executable).parent),
        "WEB_WORKERS": "2",
    }
    process = subprocess.Popen(
        [str(ROOT / "scripts" / "run-embedded")],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group, as under a terminal or a supervisor
    )
    portal = Portal(process, f"http://127.0.0.1:{port}", log)
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"run-embedded exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        try:
            if portal.get("/healthz")[0] == 200:
                return portal
        except OSError:
            pass
        time.sleep(0.5)
    os.killpg(process.pid, signal.SIGKILL)
    pytest.fail(f"run-embedded did not answer /healthz in {START_TIMEOUT} s:\n{log.read_text()[-3000:]}")


def _kill_leftovers(portal: Portal) -> None:
    for line in _group(portal.process.pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(line.split()[1]), signal.SIGKILL)


@pytest.fixture(scope="module")
def var_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("run-embedded-var")


@pytest.fixture(scope="module")
def portal(var_dir):
    """One run for the tests below; the last of them stops it."""
    running = _start(var_dir, var_dir / "run.log")
    yield running
    _kill_leftovers(running)


def test_debug_is_off_so_a_404_lists_no_url_patterns(portal):
    status, _, body = portal.get("/no-such-page/")
    assert status == 404
    assert "There is nothing here" in body  # the portal's own 404 page
    assert "URLconf" not in body and "api/v1/" not in body


def test_pages_load_with_their_css_and_js_served_by_whitenoise(portal):
    status, _, page = portal.get("/login/")
    assert status == 200
    for asset in ("/static/css/portal.css", "/static/js/portal.js", "/static/vendor/htmx/htmx-2.0.11.min.js"):
        assert asset in page
        status, headers, _ = portal.get(asset)
        assert status == 200, asset
        assert "max-age" in headers.get("Cache-Control", ""), asset  # WhiteNoise, not Django's debug view


def test_thirty_concurrent_api_clients_get_no_reset(portal):
    request = urllib.request.Request(
        portal.url + "/api/v1/auth/token/",
        data=b"username=tenant1&password=demo",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 (a local URL)
        token = json.load(response)["token"]

    def client(_: int) -> list[int | str]:
        results = []
        for _ in range(10):  # a new connection each time, like separate scripts
            try:
                results.append(portal.get("/api/v1/organizations/", Authorization=f"Token {token}")[0])
            except OSError as error:  # a reset or refused connection
                results.append(f"{error.__class__.__name__}: {error}")
        return results

    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=30) as pool:
        results = [r for batch in pool.map(client, range(30)) for r in batch]
    elapsed = time.monotonic() - started
    failures = [r for r in results if r != 200]
    print(f"300 API requests from 30 concurrent clients in {elapsed:.1f} s, {len(failures)} failed")
    assert not failures, failures[:5]


def test_the_log_says_what_happens_without_noise(portal):
    """One line per email (the demo's incident cases were mailed), no broker or root warnings repeated."""
    deadline = time.monotonic() + 60
    while "Email to " not in portal.log.read_text() and time.monotonic() < deadline:
        time.sleep(1)
    log = portal.log.read_text()
    assert "Email to " in log and "Content-Transfer-Encoding" not in log
    assert "INFO portal.mail: Email to " in log  # not a WARNING of Celery's redirected standard output
    assert "celery.redirected" not in log
    assert "No hostname was supplied" not in log
    assert "superuser privileges" not in log
    assert log.count(") in the emulator with ") == DEMO_CLUSTERS  # a live cluster per demo organization, brought up


def _processes(pgid: int) -> list[tuple[int, int, str]]:
    """(pid, parent pid, command line) of the group's running processes."""
    out = subprocess.run(["ps", "-wweo", "pgid=,pid=,ppid=,stat=,args="], capture_output=True, text=True).stdout
    rows = [line.split(None, 4) for line in out.splitlines()]
    return [
        (int(pid), int(ppid), args) for group, pid, ppid, stat, args in rows if group == str(pgid) and stat[0] != "Z"
    ]


def _celery_main(portal: Portal, marker: str) -> int | None:
    """The Celery process whose command line has `marker` and whose parent is not Celery (not a pool process)."""
    processes = _processes(portal.process.pid)
    args_of = {pid: args for pid, _, args in processes}
    found = [pid for pid, ppid, args in processes if marker in args and "celery" not in args_of.get(ppid, "")]
    return found[0] if found else None


def _wait_for(what: str, predicate, portal: Portal, timeout: float = 120):
    deadline = time.monotonic() + timeout
    while not (result := predicate()):
        if time.monotonic() > deadline:
            pytest.fail(f"not within {timeout} s: {what}\n{portal.log.read_text()[-3000:]}")
        time.sleep(0.5)
    return result


def _readies(portal: Portal, name: str) -> int:
    """How often a worker named `name` said it took its queue ("worker@host ready.")."""
    return len(re.findall(rf"\b{name}@\S+ ready\.", portal.log.read_text()))


@pytest.mark.parametrize(
    ("name", "marker", "is_worker"),
    [("worker", "--queues=celery", True), ("poller", "--queues=polls", True), ("beat", " beat ", False)],
)
def test_a_celery_process_killed_is_started_again_and_web_keeps_answering(portal, name, marker, is_worker):
    """Seen: a worker that died (Redis gone, kombu's filesystem transport reading a half-written message) brought
    all of `make run` down, or stayed dead. Killed -9 here, it is started again and said in the log; web answers."""
    victim = _wait_for(f"a running {name}", lambda: _celery_main(portal, marker), portal)
    said = f"run-embedded: {name} exited with rc=137, restarting in "
    said_before = portal.log.read_text().count(said)
    readies_before = _readies(portal, name)
    os.kill(victim, signal.SIGKILL)
    _wait_for(f"the log saying {name} exited", lambda: portal.log.read_text().count(said) > said_before, portal)
    _wait_for(f"a new {name}", lambda: _celery_main(portal, marker) not in (None, victim), portal)
    if is_worker:  # the new worker took its queue
        _wait_for(f"{name} ready again", lambda: _readies(portal, name) > readies_before, portal)
    assert portal.process.poll() is None, "make run kept running"
    assert portal.get("/healthz")[0] == 200
    assert portal.get("/login/")[0] == 200


def test_term_to_the_process_group_leaves_no_process(portal):
    left = portal.stop_with(signal.SIGTERM)
    assert not left, f"still running {GRACE_SECONDS} s after TERM:\n" + "\n".join(left)
    assert portal.process.wait(timeout=5) != 0


def test_ctrl_c_to_the_process_group_leaves_no_process(var_dir):
    second = _start(var_dir, var_dir / "run-2.log")  # the same var/: migrations and demo data already there
    try:
        # The emulator started empty and replayed what the first run recorded: the demo clusters are still there.
        log = second.log.read_text()
        assert "recorded changes replayed" in log
        assert log.count("is running.") == DEMO_CLUSTERS, log[-3000:]
        left = second.stop_with(signal.SIGINT)
        assert not left, f"still running {GRACE_SECONDS} s after Ctrl-C:\n" + "\n".join(left)
    finally:
        _kill_leftovers(second)
