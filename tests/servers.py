"""Programs the tests run as servers of their own (Prometheus in tests/health, the OpenID provider in tests/sso): the
rule for a program that is missing, a free port, starting it with its output in a log, waiting until it answers,
and stopping it."""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

START_TIMEOUT = 15.0  # seconds; each starts in well under one, so this is only hit when something is wrong


def free_port() -> int:
    """A port nothing listens on right now (the OS picks it; another process could take it before we bind)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Server:
    name: str  # for messages: "prometheus", "the OpenID provider"
    url: str  # http://127.0.0.1:<port>
    process: subprocess.Popen
    log: Path  # its stdout and stderr

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-2000:]


def start(
    name: str, command: list[str], *, port: int, ready: str, log: Path, cwd: Path | None = None, env=None
) -> Server:
    """Start `command`, which serves http://127.0.0.1:`port`, its output going to `log`; return once GET `ready`
    (a path) answers 200. If it exits first or is not ready in START_TIMEOUT, it is stopped and RuntimeError says
    why with the end of its log."""
    with log.open("w") as output:  # the child holds its own copy
        process = subprocess.Popen(command, cwd=cwd, env=env, stdout=output, stderr=subprocess.STDOUT)
    server = Server(name=name, url=f"http://127.0.0.1:{port}", process=process, log=log)
    try:
        _wait_until_ready(server, ready)
    except BaseException:  # not ready, or the run interrupted meanwhile: leave no process behind
        server.stop()
        raise
    return server


def _wait_until_ready(server: Server, ready: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            code = server.process.returncode
            raise RuntimeError(f"{server.name} exited with {code} before it was ready:\n{server.log_tail()}")
        try:
            with urllib.request.urlopen(server.url + ready, timeout=1) as response:
                if response.status == 200:
                    return
        except OSError:
            pass  # not listening yet, or an error status (Prometheus: 503 while its TSDB loads)
        time.sleep(0.02)
    raise RuntimeError(f"{server.name} at {server.url} was not ready after {START_TIMEOUT} s:\n{server.log_tail()}")
