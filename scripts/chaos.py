"""`make chaos`: run the production shape on services of its own, break it at random, and say what held.

For the run it starts, on 127.0.0.1 only: a fresh PostgreSQL cluster (initdb in a temporary folder), a Redis
server, the AWS emulator (moto server) behind a TCP proxy of its own that can pass, black-hole (accept and never
answer) or refuse connections, then the portal with PORTAL_PRODUCTION=True: migrate, collectstatic, the demo
program, gunicorn, a Celery worker (queue celery), a poller (queue polls) and beat, each restarted when it exits,
as docker-compose's `restart: always` would.

A driver then works through the API as two tenants and the program manager: creates and deletes clusters within
the tenants' allocations, comments on support cases, files capacity requests the manager approves or rejects. It
keeps every write answered 2xx, and every 5xx with its status and body. Meanwhile faults come at random (seeded,
bounded in number and length): a worker, the poller or beat killed -9, Redis stopped, AWS black-holed or refused,
PostgreSQL restarted. After the load it waits (with a ceiling) until no cluster is late, then reads the database
and the emulator and prints the figures beside the goals; it exits 1 when a goal is missed.

    make chaos                      # 10 minutes, seed 1
    make chaos MINUTES=3 SEED=7     # FAULTS=n sets how many faults (default: one per 90 s)

Every process it started and its temporary folder are gone when it ends, however it ends (Ctrl-C, a TERM, its own
hard ceiling); CHAOS_KEEP=1 keeps the folder (the services' logs) for a look afterwards.

Run with `--collect WRITES.json` (by the script itself, in the portal's environment) it prints the figures read
from the database and the emulator as JSON.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import os
import random
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / ".venv" / "bin"
LOOPBACK = "127.0.0.1"  # every service of the run listens here and nowhere else

# The goals the production shape must meet under faults: printed beside the figures.
SETTLE_GOAL_SECONDS = 180
# A cluster is late once it has been requested, provisioning or deleting for longer than this. Without faults,
# provisioning against the emulator takes seconds and a deletion is confirmed by the next poll (every 60 s).
LATE_AFTER_SECONDS = 150
IN_FLIGHT = ("requested", "provisioning", "deleting")
PROVISIONING = ("requested", "provisioning")
LIVE = (*IN_FLIGHT, "in_service", "degraded")


# --- The AWS endpoint's proxy --------------------------------------------------------------------------------


class Proxy:
    """A TCP proxy on 127.0.0.1 in front of one upstream, run on an asyncio loop in a thread of its own.

    pass: bytes flow both ways. blackhole: connections are accepted, old and new, and nothing flows either way
    (a network that drops packets; a client waits out its read timeout); back to pass, what was held flows on.
    refuse: the listener is closed (connection refused) and the connections open are cut, as when the
    endpoint's host is down."""

    MODES = ("pass", "blackhole", "refuse")

    def __init__(self, upstream_port: int, port: int = 0) -> None:
        self.upstream_port = upstream_port
        self.port = port
        self.mode = "pass"
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.Server | None = None
        self._flowing: asyncio.Event | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._thread = threading.Thread(target=self._loop.run_forever, name="aws-proxy", daemon=True)

    def start(self) -> Proxy:
        self._thread.start()
        self._call(self._open())
        return self

    def set_mode(self, mode: str) -> None:
        if mode not in self.MODES:
            raise ValueError(f"proxy mode must be one of {self.MODES}, not {mode!r}")
        self._call(self._switch(mode))

    def stop(self) -> None:
        if self._thread.is_alive():
            with contextlib.suppress(Exception):
                self._call(self._close_all())
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)

    def _call(self, coroutine):
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout=10)

    async def _open(self) -> None:
        if self._flowing is None:
            self._flowing = asyncio.Event()
            self._flowing.set()
        self._server = await asyncio.start_server(self._serve, LOOPBACK, self.port, reuse_address=True)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _switch(self, mode: str) -> None:
        if mode == self.mode:
            return
        if self.mode == "refuse":
            await self._open()
        self.mode = mode
        if mode == "pass":
            self._flowing.set()
        else:
            self._flowing.clear()
        if mode == "refuse":
            self._server.close()
            for writer in list(self._writers):
                writer.transport.abort()
            # Since Python 3.12.1 this waits for the server's connections too: cut above.
            await self._server.wait_closed()
            self._server = None

    async def _close_all(self) -> None:
        if self._server is not None:
            self._server.close()
        for writer in list(self._writers):
            writer.transport.abort()

    async def _serve(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        self._writers.add(client_writer)
        upstream_writer = None
        try:
            await self._flowing.wait()  # a connection made during a black-hole hangs here
            upstream_reader, upstream_writer = await asyncio.open_connection(LOOPBACK, self.upstream_port)
            self._writers.add(upstream_writer)
            await asyncio.gather(self._pipe(client_reader, upstream_writer), self._pipe(upstream_reader, client_writer))
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            for writer in (client_writer, upstream_writer):
                if writer is not None:
                    self._writers.discard(writer)
                    writer.transport.abort()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            await self._flowing.wait()
            data = await reader.read(65536)
            if not data:
                break
            await self._flowing.wait()  # read before a black-hole began: held until it ends
            writer.write(data)
            await writer.drain()
        with contextlib.suppress(OSError):
            writer.write_eof()


# --- The fault schedule --------------------------------------------------------------------------------------

# Each kind of fault and how long it lasts (seconds; kills are instant, their service restarts on its own).
FAULT_KINDS: dict[str, tuple[int, int]] = {
    "kill-worker": (0, 0),
    "kill-poller": (0, 0),
    "kill-beat": (0, 0),
    # AWS black-holed, so provisioning calls hang in the worker; half way the worker is killed -9.
    "kill-worker-mid-provision": (20, 40),
    "stop-redis": (10, 40),
    "aws-blackhole": (30, 150),
    "aws-refuse": (20, 60),
    "restart-postgres": (0, 0),
    # A database outage, not a restart: every API answer meanwhile is a 503, and deep health says so.
    "stop-postgres": (20, 30),
}
# What deep health must say while each kind of fault lasts: a line of its `problems` starting so. A fast restart of
# PostgreSQL is over in a fraction of a second, before anything could name it.
NAMES: dict[str, str | None] = {
    "kill-worker": "consumers:",
    "kill-poller": "consumers:",
    "kill-beat": "beat:",
    "kill-worker-mid-provision": "aws:",
    "stop-redis": "broker:",
    "aws-blackhole": "aws:",
    "aws-refuse": "aws:",
    "restart-postgres": None,
    "stop-postgres": "database:",
}
NAME_WITHIN = CLEAR_WITHIN = 15  # seconds: a fault named within this of its start, cleared within this of its end
HEALTH_EVERY = 2.0  # seconds between two questions to /healthz?deep=1
FAULT_GAP_SECONDS = 20  # between the end of one fault and the start of the next


@dataclass(frozen=True)
class Fault:
    at: float  # seconds after the load started
    kind: str
    seconds: int  # how long the fault holds (0: instant)

    @property
    def ends(self) -> float:
        return self.at + self.seconds


def schedule_faults(
    rng: random.Random, *, count: int, window: float, warmup: float = 30.0, gap: float = FAULT_GAP_SECONDS
) -> list[Fault]:
    """At most `count` faults, in time order, none overlapping another, each over by the end of `window`.

    Kinds are dealt round the kinds in a shuffled order, so a short run still sees different ones. Where the
    window is too short for them all, fewer are scheduled (the run reports how many)."""
    if count <= 0 or window <= warmup:
        return []
    kinds = list(FAULT_KINDS)
    rng.shuffle(kinds)
    wanted = [kinds[i % len(kinds)] for i in range(count)]
    durations = [rng.randint(*FAULT_KINDS[kind]) for kind in wanted]
    # Shorten the longest faults until every fault and the gaps between them fit the window.
    room = window - warmup - gap * (len(wanted) - 1)
    while wanted and sum(durations) > room:
        longest = max(range(len(durations)), key=durations.__getitem__)
        low = FAULT_KINDS[wanted[longest]][0]
        if durations[longest] > low:
            durations[longest] = max(low, durations[longest] - 5)
        else:  # at their shortest and still too long: drop the last fault
            wanted.pop()
            durations.pop()
            room = window - warmup - gap * max(len(wanted) - 1, 0)
    if not wanted:
        return []
    # Spread the slack at random between the faults (sorted cut points in the slack).
    slack = room - sum(durations)
    cuts = sorted(rng.uniform(0, slack) for _ in wanted)
    faults, start, used = [], warmup, 0.0
    for kind, seconds, cut in zip(wanted, durations, cuts, strict=True):
        start += cut - used
        used = cut
        faults.append(Fault(at=round(start, 1), kind=kind, seconds=seconds))
        start += seconds + gap
    return faults


# --- What deep health said ------------------------------------------------------------------------------------


def named_and_cleared(health, kind: str, began: float, ended: float) -> tuple[float | None, float | None]:
    """Seconds from the fault's start until deep health first named it, and from its end until it first no longer
    did; None where that never happened (within the fault and CLEAR_WITHIN after it, for the naming)."""
    prefix = NAMES[kind]
    if prefix is None:
        return None, None
    named_at = next(
        (when for when, _status, problems in health
         if began <= when <= ended + CLEAR_WITHIN and any(p.startswith(prefix) for p in problems)),
        None,
    )  # fmt: skip
    if named_at is None:
        return None, None
    cleared_at = next(
        (when for when, _status, problems in health
         if when >= max(ended, named_at) and not any(p.startswith(prefix) for p in problems)),
        None,
    )  # fmt: skip
    return named_at - began, (None if cleared_at is None else max(0.0, cleared_at - ended))


def false_alarms(health, windows: list[tuple[float, float]]) -> list[tuple[float, int, list[str]]]:
    """Deep health answers other than 200 outside every fault (from its start to CLEAR_WITHIN after its end)."""
    return [
        (when, status, problems)
        for when, status, problems in health
        if status != 200 and not any(began <= when <= ended + CLEAR_WITHIN for began, ended in windows)
    ]


def answers_during(answers, windows: list[tuple[float, float]], *, settle: float = 2.0) -> collections.Counter:
    """The API's answers by status while a fault held (from `settle` s after its start: a request under way when it
    began may still have been answered)."""
    return collections.Counter(
        status for when, status in answers if any(began + settle <= when <= ended for began, ended in windows)
    )


# --- Processes -----------------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def kill_group(process: subprocess.Popen, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, sig)


def stop_group(process: subprocess.Popen, grace: float = 10.0) -> None:
    """TERM to the process and its children (its own session), KILL to whatever is left after the grace."""
    if process.poll() is None:
        kill_group(process, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=grace)
    kill_group(process, signal.SIGKILL)  # children outliving their parent too
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=5)


@dataclass
class Service:
    """A process of the portal under a restart policy (docker-compose's `restart: always`)."""

    name: str
    argv: list[str]
    env: dict
    log: Path
    restart_delay: float = 2.0
    process: subprocess.Popen | None = None
    exits: list[tuple[float, int | None, bool]] = field(default_factory=list)  # (when, code, killed by a fault)
    starts: list[float] = field(default_factory=list)  # monotonic
    _killing: bool = False
    _down_since: float | None = None

    def start(self) -> None:
        self.starts.append(time.monotonic())
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                self.argv, cwd=ROOT, env=self.env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        self._down_since = None

    def kill9(self) -> None:
        """A fault: the whole process group, as `docker kill` takes a container's processes."""
        if self.process is not None and self.process.poll() is None:
            self._killing = True
            kill_group(self.process, signal.SIGKILL)

    def supervise(self, now: float) -> None:
        if self.process is None:
            return
        code = self.process.poll()
        if code is None:
            return
        if self._down_since is None:
            self._down_since = now
            self.exits.append((now, code, self._killing))
            self._killing = False
            kill_group(self.process, signal.SIGKILL)  # pool children left behind by a killed parent
        if now - self._down_since >= self.restart_delay:
            self.start()

    def stop(self) -> None:
        if self.process is not None:
            stop_group(self.process)


# --- The run's services ------------------------------------------------------------------------------------


def postgres_bin(name: str) -> str:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"))
    if not candidates:
        raise SystemExit(f"chaos: {name} not found (install PostgreSQL's server package)")
    return str(candidates[-1])


class Infra:
    """PostgreSQL, Redis and the AWS emulator of this run, and the faults on them."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.pg_port, self.redis_port, self.moto_port = free_port(), free_port(), free_port()
        self.pg_data = folder / "pgdata"
        self.redis: subprocess.Popen | None = None
        self.moto: subprocess.Popen | None = None
        self.proxy: Proxy | None = None
        self.pg_started = False
        # initdb refuses to run as root: the cluster then belongs to the machine's postgres user.
        self.as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []

    def _pg(self, *args: str, check: bool = True) -> int:
        # Output to a file, never a pipe: a server started by pg_ctl keeps its parent's output open, and a
        # pipe would then never reach its end.
        with (self.folder / "pg_ctl.log").open("ab") as out:
            code = subprocess.call([*self.as_user, *args], stdout=out, stderr=subprocess.STDOUT, cwd=self.folder,
                                   timeout=120)  # fmt: skip
        if check and code:
            raise SystemExit(f"chaos: {' '.join(args[:1])} failed ({code}); see {self.folder / 'pg_ctl.log'}")
        return code

    def start_postgres(self) -> None:
        self.pg_data.mkdir()
        if self.as_user:
            shutil.chown(self.pg_data, "postgres", "postgres")
        self._pg(postgres_bin("initdb"), "-D", str(self.pg_data), "-U", "postgres", "--auth=trust", "-E", "UTF8")
        self.pg_started = True
        # fsync off: a fast restart shuts down cleanly (a checkpoint), so it loses nothing either way.
        options = f"-c listen_addresses={LOOPBACK} -p {self.pg_port} -k {self.pg_data} -c fsync=off"
        self._pg(
            postgres_bin("pg_ctl"),
            "-D",
            str(self.pg_data),
            "-l",
            str(self.pg_data / "log"),
            "-o",
            options,
            "-w",
            "start",
        )
        self._pg(postgres_bin("createdb"), "-h", LOOPBACK, "-p", str(self.pg_port), "-U", "postgres", "portal")

    def restart_postgres(self) -> None:
        log = str(self.pg_data / "log")  # restart keeps the server's options, not where its log goes
        self._pg(postgres_bin("pg_ctl"), "-D", str(self.pg_data), "-l", log, "-m", "fast", "-w", "restart", check=False)

    def stop_postgres(self) -> None:
        self._pg(postgres_bin("pg_ctl"), "-D", str(self.pg_data), "-m", "fast", "-w", "stop", check=False)

    def start_again_postgres(self) -> None:
        log = str(self.pg_data / "log")
        options = f"-c listen_addresses={LOOPBACK} -p {self.pg_port} -k {self.pg_data} -c fsync=off"
        self._pg(postgres_bin("pg_ctl"), "-D", str(self.pg_data), "-l", log, "-o", options, "-w", "start", check=False)

    def start_redis(self) -> None:
        # As in docker-compose: an append-only file, so a stopped Redis comes back with its queues.
        self.redis = subprocess.Popen(
            [
                "redis-server",
                "--bind",
                LOOPBACK,
                "--port",
                str(self.redis_port),
                "--dir",
                str(self.folder),
                "--appendonly",
                "yes",
                "--save",
                "",
                "--logfile",
                str(self.folder / "redis.log"),
            ],
            start_new_session=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for_port(self.redis_port, what="Redis")

    def stop_redis(self) -> None:
        if self.redis is not None:
            stop_group(self.redis)

    def start_moto(self) -> None:
        with (self.folder / "moto.log").open("ab") as out:
            self.moto = subprocess.Popen(
                [str(BIN / "moto_server"), "-H", LOOPBACK, "-p", str(self.moto_port)],
                start_new_session=True,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        wait_for_port(self.moto_port, what="the AWS emulator")
        self.proxy = Proxy(self.moto_port).start()

    def stop(self) -> None:
        if self.proxy is not None:
            self.proxy.stop()
        for process in (self.moto, self.redis):
            if process is not None:
                stop_group(process)
        if self.pg_started:
            self._pg(postgres_bin("pg_ctl"), "-D", str(self.pg_data), "-m", "immediate", "-w", "stop", check=False)


def wait_for_port(port: int, *, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection((LOOPBACK, port), timeout=1):
            return
        time.sleep(0.2)
    raise SystemExit(f"chaos: {what} did not listen on {LOOPBACK}:{port} within {timeout:.0f} s")


def portal_env(infra: Infra, web_port: int, folder: Path, *, production: bool = True) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "DATABASE_", "CELERY_", "PORTAL_"))}
    env.update(
        PORTAL_PRODUCTION=str(production),
        DEBUG="False",
        SECRET_KEY=SECRET_KEY,
        PORTAL_URL=f"http://{LOOPBACK}:{web_port}",
        ALLOWED_HOSTS=LOOPBACK,
        CSRF_TRUSTED_ORIGINS=f"http://{LOOPBACK}:{web_port}",
        # Plain HTTP on loopback: nothing in front terminates TLS.
        BEHIND_TLS_PROXY="False",
        SECURE_SSL_REDIRECT="False",
        SECURE_HSTS_SECONDS="0",
        DATABASE_URL=f"postgres://postgres@{LOOPBACK}:{infra.pg_port}/portal",
        CELERY_BROKER_URL=f"redis://{LOOPBACK}:{infra.redis_port}/0",
        AWS_ENDPOINT_URL=f"http://{LOOPBACK}:{infra.proxy.port}",
        AWS_ACCESS_KEY_ID="emulator",
        AWS_SECRET_ACCESS_KEY="emulator",
        AWS_SESSION_TOKEN="emulator",
        AWS_DEFAULT_REGION="us-east-1",
        PORTAL_VAR_DIR=str(folder / "var"),
        PYTHONUNBUFFERED="1",
    )
    if os.geteuid() == 0:  # as scripts/run-embedded: the machine's choice, not a warning per worker start
        env["PYTHONWARNINGS"] = "ignore:You're running the worker with superuser privileges"
    return env


SECRET_KEY = secrets.token_urlsafe(48)


def manage(env: dict, *args: str, log: Path) -> None:
    with log.open("ab") as out:
        code = subprocess.call(
            [str(BIN / "python"), "manage.py", *args],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=600,
        )
    if code:
        raise SystemExit(f"chaos: manage.py {' '.join(args)} failed ({code}); see {log}")


# --- The API driver ------------------------------------------------------------------------------------------


class Api:
    """JSON over HTTP with a token; every answer is tallied in the shared Ledger."""

    def __init__(self, base: str, token: str, actor: str, ledger: Ledger) -> None:
        self.base, self.token, self.actor, self.ledger = base, token, actor, ledger

    def call(self, method: str, path: str, body: dict | None = None, *, route: str | None = None):
        """(status, parsed body); status 0 when nothing answered."""
        request = urllib.request.Request(
            self.base + path,
            data=None if body is None else json.dumps(body).encode(),
            method=method,
            headers={
                "Authorization": f"Token {self.token}",
                "Content-Type": "application/json",
                "Accept": "application/json",
            },
        )
        route = route or re.sub(r"/\d+/", "/{id}/", path.split("?")[0])
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                status, raw = answer.status, answer.read()
        except urllib.error.HTTPError as error:
            status, raw = error.code, error.read()
        except (OSError, TimeoutError) as error:
            with self.ledger.lock:
                self.ledger.no_answer[f"{method} {route}: {type(error).__name__}"] += 1
                self.ledger.answers.append((time.monotonic(), 0))
            return 0, None
        text = raw.decode(errors="replace")
        try:
            parsed = json.loads(text) if text else None
        except ValueError:
            parsed = None
        self.ledger.answered(method, route, status, text)
        return status, parsed


@dataclass
class Ledger:
    writes: list[dict] = field(default_factory=list)  # answered 2xx: what must be in the database afterwards
    statuses: collections.Counter = field(default_factory=collections.Counter)
    server_errors: collections.Counter = field(default_factory=collections.Counter)  # (status, route, cause)
    client_errors: collections.Counter = field(default_factory=collections.Counter)
    no_answer: collections.Counter = field(default_factory=collections.Counter)
    answers: list[tuple[float, int]] = field(default_factory=list)  # (monotonic, status; 0: no answer)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answered(self, method: str, route: str, status: int, text: str) -> None:
        with self.lock:
            self.answers.append((time.monotonic(), status))
            self.statuses[status] += 1
            if status >= 500:
                self.server_errors[(status, f"{method} {route}", cause(text))] += 1
            elif status >= 400:
                self.client_errors[(status, f"{method} {route}", cause(text, 90))] += 1

    def wrote(self, kind: str, **what) -> None:
        with self.lock:
            self.writes.append({"kind": kind, **what})


def cause(text: str, width: int = 140) -> str:
    """A 5xx body in one line: an HTML page's title, else the text."""
    if match := re.search(r"<title>(.*?)</title>", text, re.S | re.I):
        text = match.group(1)
    return " ".join(text.split())[:width] or "(empty body)"


class Tenant(threading.Thread):
    """A tenant's script: clusters within its allocation, comments on its cases, capacity requests."""

    def __init__(self, api: Api, rng: random.Random, stop: threading.Event, case_ids: list[int]) -> None:
        super().__init__(name=f"driver-{api.actor}", daemon=True)
        self.api, self.rng, self.stop_event, self.case_ids = api, rng, stop, case_ids
        self.serial = 0

    def run(self) -> None:
        while not self.stop_event.wait(self.rng.uniform(1.0, 3.0)):
            try:
                self.step()
            except Exception as error:  # a bug in the driver must not stop the run: count it and go on
                self.api.ledger.no_answer[f"driver error: {type(error).__name__}: {error}"[:120]] += 1

    def step(self) -> None:
        roll = self.rng.random()
        if roll < 0.55:
            self.clusters()
        elif roll < 0.8:
            self.comment()
        else:
            self.capacity_request()

    def clusters(self) -> None:
        status, allocations = self.api.call("GET", "/api/v1/allocations/?status=active")
        status_c, clusters = self.api.call("GET", "/api/v1/clusters/")
        if status != 200 or status_c != 200:
            return
        allocation = next((a for a in allocations["results"] if a["instance_type"] == "p5.48xlarge"), None)
        if allocation is None:
            return
        live = [c for c in clusters["results"] if c["status"] in LIVE]
        held = sum(g["instance_count"] for c in live for g in c["groups"] if g["role"] == "worker")
        free = allocation["instance_count"] - held
        # A fault's probe cluster (Run.probe) is left alone: it is there to be watched.
        deletable = [c for c in live if c["status"] != "deleting" and not c["name"].startswith("chaos-probe-")]
        # Create while there is room, else delete (any live cluster, in flight too).
        if free >= 1 and (not deletable or self.rng.random() < 0.6):
            self.serial += 1
            name = f"chaos-{self.api.actor}-{self.serial}"
            count = self.rng.randint(1, min(3, free))
            body = {"allocation": allocation["id"], "name": name, "instance_count": count}
            status, created = self.api.call("POST", "/api/v1/clusters/", body)
            if status == 202:
                self.api.ledger.wrote("cluster_created", id=created["id"], name=name)
                if self.rng.random() < 0.2:  # changed its mind: deleted while its creation is in flight
                    status, _ = self.api.call("DELETE", f"/api/v1/clusters/{created['id']}/")
                    if status == 202:
                        self.api.ledger.wrote("cluster_deleted", id=created["id"], status_before="requested")
        elif deletable:
            target = self.rng.choice(deletable)
            status, _ = self.api.call("DELETE", f"/api/v1/clusters/{target['id']}/")
            if status == 202:
                self.api.ledger.wrote("cluster_deleted", id=target["id"], status_before=target["status"])

    def comment(self) -> None:
        if not self.case_ids:
            return
        case_id = self.rng.choice(self.case_ids)
        body = f"chaos comment {secrets.token_hex(6)}"
        status, event = self.api.call("POST", f"/api/v1/support-cases/{case_id}/events/", {"body": body})
        if status == 201:
            self.api.ledger.wrote("case_comment", id=event["id"], case=case_id, body=body)

    def capacity_request(self) -> None:
        # Short windows a month or two ahead on the Trainium pool, which has room for a few: the manager's
        # approvals race each other for its last instances.
        starts_on = date.today() + timedelta(days=self.rng.randint(30, 60))
        body = {
            "instance_type": "trn1.32xlarge",
            "region": "us-east-1",
            "instance_count": self.rng.randint(1, 3),
            "starts_on": starts_on.isoformat(),
            "ends_on": (starts_on + timedelta(days=self.rng.randint(3, 14))).isoformat(),
            "justification": "Chaos run: a short evaluation window.",
            "submit": True,
        }
        status, created = self.api.call("POST", "/api/v1/capacity-requests/", body)
        if status == 201:
            self.api.ledger.wrote("request_submitted", id=created["id"])


class Manager(threading.Thread):
    """The program manager: decides on submitted requests, several at once (approvals race for the pool)."""

    def __init__(self, api: Api, rng: random.Random, stop: threading.Event) -> None:
        super().__init__(name="driver-manager", daemon=True)
        self.api, self.rng, self.stop_event = api, rng, stop

    def run(self) -> None:
        while not self.stop_event.wait(self.rng.uniform(2.0, 5.0)):
            try:
                self.step()
            except Exception as error:
                self.api.ledger.no_answer[f"driver error: {type(error).__name__}: {error}"[:120]] += 1

    def step(self) -> None:
        status, found = self.api.call("GET", "/api/v1/capacity-requests/?status=submitted")
        if status != 200:
            return
        threads = []
        for request in found["results"][:4]:
            threads.append(threading.Thread(target=self.decide, args=(request["id"], self.rng.random())))
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    def decide(self, request_id: int, roll: float) -> None:
        if roll < 0.8:
            status, allocation = self.api.call("POST", f"/api/v1/capacity-requests/{request_id}/approve/", {})
            if status == 201:
                self.api.ledger.wrote("request_approved", id=request_id, allocation=allocation["id"])
            if status != 400:
                return
            # Refused (it would overcommit the pool): the manager says no rather than asking again forever.
        body = {"comment": "Not this cycle (chaos run)."}
        status, _ = self.api.call("POST", f"/api/v1/capacity-requests/{request_id}/reject/", body)
        if status == 200:
            self.api.ledger.wrote("request_rejected", id=request_id)


class Watch(threading.Thread):
    """Every few seconds: which clusters are late (read from PostgreSQL), and what /healthz?deep=1 says."""

    def __init__(self, dsn: str, web: str, stop: threading.Event, every: float = HEALTH_EVERY) -> None:
        super().__init__(name="watch", daemon=True)
        self.dsn, self.web, self.stop_event, self.every = dsn, web, stop, every
        self.samples: list[tuple[float, int | None, int]] = []  # (monotonic, late clusters or None, in flight)
        # (monotonic when answered, HTTP status of /healthz?deep=1 (0: no answer), its problems)
        self.health: list[tuple[float, int, list[str]]] = []

    def run(self) -> None:
        while not self.stop_event.is_set():
            now = time.monotonic()
            self.samples.append((now, *self.late()))
            status, problems = self.healthz()
            self.health.append((time.monotonic(), status, problems))  # when the answer came
            self.stop_event.wait(max(0.0, self.every - (time.monotonic() - now)))

    def late(self) -> tuple[int | None, int]:
        import psycopg

        try:
            with psycopg.connect(self.dsn, connect_timeout=3) as connection:
                row = connection.execute(
                    "SELECT count(*) FILTER (WHERE status_changed_at < now() - make_interval(secs => %s)), count(*)"
                    " FROM workloads_cluster WHERE status = ANY(%s)",
                    (LATE_AFTER_SECONDS, list(IN_FLIGHT)),
                ).fetchone()
                return row[0], row[1]
        except psycopg.Error:
            return None, 0

    def healthz(self) -> tuple[int, list[str]]:
        try:
            with urllib.request.urlopen(self.web + "/healthz?deep=1", timeout=10) as answer:
                status, raw = answer.status, answer.read()
        except urllib.error.HTTPError as error:
            status, raw = error.code, error.read()
        except (OSError, TimeoutError) as error:
            return 0, [f"no answer: {type(error).__name__}"]
        try:
            problems = json.loads(raw).get("problems", [])
        except (ValueError, AttributeError):
            problems = [f"not JSON: {cause(raw.decode(errors='replace'), 80)}"]
        return status, [str(problem) for problem in problems]


# --- The run -------------------------------------------------------------------------------------------------


class Run:
    def __init__(self, *, minutes: float, seed: int, faults: int | None, settle_minutes: float) -> None:
        self.minutes, self.seed, self.settle_minutes = minutes, seed, settle_minutes
        self.fault_count = faults if faults is not None else max(1, round(minutes * 60 / 90))
        self.folder = Path(tempfile.mkdtemp(prefix="portal-chaos-"))
        self.folder.chmod(0o755)  # PostgreSQL's user must reach its data folder inside
        self.infra = Infra(self.folder)
        self.web_port = free_port()
        self.services: dict[str, Service] = {}
        self.ledger = Ledger()
        self.drivers: list = []
        self.probes = 0
        self.stop_load = threading.Event()
        self.stop_watch = threading.Event()
        self.done_faults: list[tuple[Fault, float, float, str]] = []  # (fault, started, ended: monotonic, note)
        self.log = self.folder / "setup.log"

    # Setting up ---------------------------------------------------------------------------------------------

    def say(self, text: str) -> None:
        print(f"[chaos {time.strftime('%H:%M:%S', time.gmtime())} UTC] {text}", flush=True)

    def set_up(self) -> None:
        self.say(f"services in {self.folder} (PostgreSQL, Redis, AWS emulator behind a proxy; loopback only)")
        self.infra.start_postgres()
        self.infra.start_redis()
        self.infra.start_moto()
        self.env = portal_env(self.infra, self.web_port, self.folder)
        (self.folder / "var").mkdir(exist_ok=True)
        self.say("migrate, collectstatic, the demo program (the demo commands refuse production: seeded without)")
        manage(self.env, "migrate", "--no-input", log=self.log)
        manage(self.env, "compiletranslations", log=self.log)
        manage(self.env, "collectstatic", "--no-input", log=self.log)
        seed_env = {**portal_env(self.infra, self.web_port, self.folder, production=False)}
        for command in (
            ["load_demo"],
            ["load_cluster_demo"],
            ["load_demo_workloads"],
            ["load_cluster_demo", "--seed-emulator"],
        ):
            manage(seed_env, *command, log=self.log)
        logs = self.folder / "logs"
        logs.mkdir()
        celery = [str(BIN / "celery"), "-A", "portal"]
        # As docker-compose.yml runs them.
        for name, argv in (
            (
                "web",
                [
                    str(BIN / "gunicorn"),
                    "portal.wsgi:application",
                    "--bind",
                    f"{LOOPBACK}:{self.web_port}",
                    "--workers",
                    "3",
                    "--no-control-socket",
                    "--access-logfile",
                    "-",
                ],
            ),
            (
                "worker",
                [*celery, "worker", "--queues=celery", "--loglevel=INFO", "--concurrency=4", "--hostname=worker@%h"],
            ),
            (
                "poller",
                [*celery, "worker", "--queues=polls", "--loglevel=INFO", "--concurrency=2", "--hostname=poller@%h"],
            ),
            ("beat", [*celery, "beat", "--loglevel=INFO", "--pidfile="]),
        ):
            self.services[name] = Service(name, argv, self.env, logs / f"{name}.log")
            self.services[name].start()
        self.base = f"http://{LOOPBACK}:{self.web_port}"
        deadline = time.monotonic() + 120
        while self.healthz() != 200:
            if time.monotonic() > deadline:
                raise SystemExit(f"chaos: the portal did not answer /healthz within 120 s; see {logs}")
            self.supervise()
            time.sleep(1)

    def healthz(self) -> int:
        try:
            with urllib.request.urlopen(self.base + "/healthz", timeout=5) as answer:
                return answer.status
        except urllib.error.HTTPError as error:
            return error.code
        except OSError:
            return 0

    def token(self, username: str) -> str:
        request = urllib.request.Request(
            self.base + "/api/v1/auth/token/",
            data=json.dumps({"username": username, "password": "demo", "name": "chaos"}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as answer:
            return json.loads(answer.read())["token"]

    def supervise(self) -> None:
        now = time.monotonic()
        for service in self.services.values():
            service.supervise(now)

    # Faults -------------------------------------------------------------------------------------------------

    def begin(self, fault: Fault) -> str:
        kind = fault.kind
        if kind == "kill-worker-mid-provision":
            self.infra.proxy.set_mode("blackhole")
            return f"AWS black-holed for {fault.seconds} s, the worker killed -9 half way; {self.probe()}"
        if kind.startswith("kill-"):
            self.services[kind.removeprefix("kill-")].kill9()
            return "killed -9"
        if kind == "stop-redis":
            self.infra.stop_redis()
            return f"Redis stopped for {fault.seconds} s"
        if kind == "aws-blackhole":
            self.infra.proxy.set_mode("blackhole")
            return f"AWS black-holed for {fault.seconds} s"
        if kind == "aws-refuse":
            self.infra.proxy.set_mode("refuse")
            return f"AWS refused for {fault.seconds} s"
        if kind == "restart-postgres":
            started = time.monotonic()
            self.infra.restart_postgres()
            return f"pg_ctl restart -m fast took {time.monotonic() - started:.1f} s"
        if kind == "stop-postgres":
            self.infra.stop_postgres()
            return f"PostgreSQL stopped for {fault.seconds} s"
        raise ValueError(kind)

    def probe(self) -> str:
        """A cluster created for the fault, which the tenants never delete: one surely mid-provision."""
        self.probes += 1
        for driver in self.drivers[:2]:
            status, allocations = driver.api.call("GET", "/api/v1/allocations/?status=active")
            found = [a for a in (allocations or {}).get("results", []) if a["instance_type"] == "p5.48xlarge"]
            if status != 200 or not found:
                continue
            body = {"allocation": found[0]["id"], "name": f"chaos-probe-{self.probes}", "instance_count": 1}
            status, created = driver.api.call("POST", "/api/v1/clusters/", body)
            if status == 202:
                driver.api.ledger.wrote("cluster_created", id=created["id"], name=body["name"])
                return f"probe cluster {created['id']} created"
        return "no probe cluster (no room in the allocations)"

    def end(self, fault: Fault) -> None:
        if fault.kind == "stop-redis":
            self.infra.start_redis()
        elif fault.kind == "stop-postgres":
            self.infra.start_again_postgres()
        elif fault.kind.startswith("aws-") or fault.kind == "kill-worker-mid-provision":
            self.infra.proxy.set_mode("pass")

    # The run ------------------------------------------------------------------------------------------------

    def execute(self) -> int:
        self.set_up()
        tokens = {name: self.token(name) for name in ("tenant1", "tenant2", "manager")}
        cases = {}
        for name in ("tenant1", "tenant2"):
            status, found = Api(self.base, tokens[name], name, Ledger()).call("GET", "/api/v1/support-cases/")
            cases[name] = [c["id"] for c in found["results"]] if status == 200 else []
        window = self.minutes * 60
        faults = schedule_faults(random.Random(self.seed), count=self.fault_count, window=window - 30)
        self.say(
            f"load for {self.minutes:g} min (seed {self.seed}), {len(faults)} faults: "
            + ", ".join(f"{f.kind}@{f.at:.0f}s" + (f"/{f.seconds}s" if f.seconds else "") for f in faults)
        )
        self.drivers = drivers = [
            Tenant(
                Api(self.base, tokens["tenant1"], "tenant1", self.ledger),
                random.Random(self.seed * 10 + 1),
                self.stop_load,
                cases["tenant1"],
            ),
            Tenant(
                Api(self.base, tokens["tenant2"], "tenant2", self.ledger),
                random.Random(self.seed * 10 + 2),
                self.stop_load,
                cases["tenant2"],
            ),
            Manager(
                Api(self.base, tokens["manager"], "manager", self.ledger),
                random.Random(self.seed * 10 + 3),
                self.stop_load,
            ),
        ]
        dsn = f"host={LOOPBACK} port={self.infra.pg_port} user=postgres dbname=portal"
        self.watch = Watch(dsn, self.base, self.stop_watch)
        self.watch.start()
        for driver in drivers:
            driver.start()
        started = time.monotonic()
        pending, active, halfway = list(faults), None, False
        while time.monotonic() - started < window:
            now = time.monotonic() - started
            if active is None and pending and now >= pending[0].at:
                fault = pending.pop(0)
                note = self.begin(fault)
                active = (fault, time.monotonic(), note)
                self.say(f"fault: {fault.kind} ({note})")
            mid_provision = active is not None and active[0].kind == "kill-worker-mid-provision"
            if mid_provision and not halfway and time.monotonic() - active[1] >= active[0].seconds / 2:
                self.services["worker"].kill9()
                halfway = True
            if active is not None and time.monotonic() - active[1] >= active[0].seconds:
                halfway = False
                ended = time.monotonic()  # the fault is over when its undoing begins (PostgreSQL takes a second)
                self.end(active[0])
                self.done_faults.append((active[0], active[1], ended, active[2]))
                active = None
            self.supervise()
            time.sleep(0.5)
        if active is not None:  # never by the schedule; by a slow machine
            self.end(active[0])
            self.done_faults.append((active[0], active[1], time.monotonic(), active[2]))
        self.stop_load.set()
        for driver in drivers:
            driver.join(timeout=60)
        load_ended = time.monotonic()
        last_fault_end = max((ended for *_, ended, _ in self.done_faults), default=started)
        self.say(f"load stopped; waiting until no cluster is in flight (at most {self.settle_minutes:g} min)")
        deadline = load_ended + self.settle_minutes * 60
        while time.monotonic() < deadline:
            self.supervise()
            samples = [s for s in self.watch.samples if s[0] > load_ended]
            if samples and samples[-1][1] is not None and samples[-1][2] == 0:
                break
            time.sleep(1)
        self.stop_watch.set()
        self.watch.join(timeout=30)
        return self.report(started=started, last_fault_end=last_fault_end, load_ended=load_ended)

    # The figures --------------------------------------------------------------------------------------------

    def collect(self) -> dict:
        writes = self.folder / "writes.json"
        writes.write_text(json.dumps(self.ledger.writes))
        # Read the emulator directly, not through the proxy: the inventory must not depend on the faults.
        env = {**self.env, "AWS_ENDPOINT_URL": f"http://{LOOPBACK}:{self.infra.moto_port}"}
        out = subprocess.run(
            [str(BIN / "python"), str(Path(__file__).resolve()), "--collect", str(writes)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if out.returncode:
            raise SystemExit(f"chaos: collecting the figures failed:\n{out.stderr[-3000:]}")
        return json.loads(out.stdout)

    def settled_after(self, last_fault_end: float, load_ended: float) -> float | None:
        """Seconds from the end of the last fault until no cluster was late any more (and, once the load stopped,
        none was in flight); None when that never happened before the ceiling."""
        samples = [s for s in self.watch.samples if s[0] >= last_fault_end]
        if not samples:
            return None
        final = samples[-1]
        if final[1] is None or final[1] > 0 or final[2] > 0:
            return None
        last_bad = last_fault_end
        for when, late, in_flight in samples:
            if late is None or late > 0 or (when > load_ended and in_flight > 0):
                last_bad = when
        return max(0.0, last_bad - last_fault_end)

    def fault_spans(self) -> list[tuple[Fault, float, float, str]]:
        """Each fault with when it began and ended; a killed process's fault ends when it was started again."""
        spans = []
        for fault, began, ended, note in self.done_faults:
            service = self.services.get(fault.kind.removeprefix("kill-")) if fault.kind.startswith("kill-") else None
            if service is not None and fault.kind != "kill-worker-mid-provision":
                ended = next((when for when in service.starts if when >= began), ended)
            spans.append((fault, began, ended, note))
        return spans

    def health_figures(self) -> dict:
        spans = self.fault_spans()
        verdicts = [(fault, *named_and_cleared(self.watch.health, fault.kind, began, ended)) for fault, began, ended,
                    _ in spans]  # fmt: skip
        not_named = 0
        for (fault, named, _), (_, began, ended, _) in zip(verdicts, spans, strict=True):
            judged = NAMES[fault.kind] is not None and ended - began >= NAME_WITHIN  # a kill may be over before
            if (named is None and judged) or (named is not None and named > NAME_WITHIN):
                not_named += 1
        not_cleared = sum(1 for _, named, cleared in verdicts if named is not None and (cleared or 1e9) > CLEAR_WITHIN)
        outages = [(began, ended) for fault, began, ended, _ in spans if fault.kind == "stop-postgres"]
        during = answers_during(self.ledger.answers, outages)
        return {
            "spans": spans,
            "verdicts": verdicts,
            "not_named": not_named,
            "not_cleared": not_cleared,
            "false_alarms": false_alarms(self.watch.health, [(began, ended) for _, began, ended, _ in spans]),
            "outage_answers": during,
            "outage_not_503": sum(n for status, n in during.items() if status != 503),
        }

    def report(self, *, started: float, last_fault_end: float, load_ended: float) -> int:
        figures = self.collect()
        health = figures["health"] = self.health_figures()
        settled = self.settled_after(last_fault_end, load_ended)
        other_5xx = sum(n for (status, _, _), n in self.ledger.server_errors.items() if status != 503)
        answered_503 = sum(n for (status, _, _), n in self.ledger.server_errors.items() if status == 503)
        goals = [
            ("clusters stuck (requested/provisioning/deleting)", figures["stuck"], 0),
            ("duplicate cloud clusters", figures["duplicates"], 0),
            ("orphaned cloud clusters", figures["orphans"], 0),
            ("writes answered 2xx and missing afterwards", len(figures["lost"]), 0),
            ("overcommitted pool-days", figures["overcommitted_pool_days"], 0),
            ("5xx other than 503", other_5xx, 0),
            # A worker killed mid-provision: every cluster in service within 3 minutes.
            ("longest a cluster took to provision (seconds)", figures["slowest_seconds"], SETTLE_GOAL_SECONDS),
            # Deep health speaks early and only when something is wrong.
            (f"faults deep health did not name within {NAME_WITHIN} s", health["not_named"], 0),
            (f"faults deep health still named {CLEAR_WITHIN} s after their end", health["not_cleared"], 0),
            ("deep health alarms outside any fault", len(health["false_alarms"]), 0),
            ("API answers other than 503 while PostgreSQL was down", health["outage_not_503"], 0),
        ]
        missed = []
        print()
        print(
            f"=== Chaos run: {self.minutes:g} min of load, seed {self.seed}, {len(self.done_faults)} faults, "
            f"API answers {sum(self.ledger.statuses.values())}"
        )
        print(f"{'':52}{'measured':>10}  goal")
        print(f"{'clusters created':52}{figures['created']:>10}")
        for status in ("in_service", "degraded", "deleted", "failed"):
            print(f"{'  ' + status.replace('_', ' '):52}{figures['by_status'].get(status, 0):>10}")
        for label, value, goal in goals:
            verdict = "ok" if value <= goal else "MISSED"
            if verdict != "ok":
                missed.append(label)
            print(f"{label:52}{value:>10}  {goal:<6} {verdict}")
        print(f"{'  (writes answered 2xx)':52}{len(self.ledger.writes):>10}")
        print(f"{'  (pool-days where the ledger differs: --check)':52}{figures['ledger_differences']:>10}")
        print(f"{'  (503 answers)':52}{answered_503:>10}")
        print(f"{'  (longest deletion, seconds: waits out AWS faults)':52}{figures['slowest_deletion_seconds']:>10}")
        if settled is None:
            missed.append("settled within 3 minutes of the last fault")
            ceiling = time.monotonic() - last_fault_end
            print(
                f"{'time from the last fault until nothing is late':52}{'>' + format(ceiling, '.0f') + ' s':>10}"
                f"  ≤{SETTLE_GOAL_SECONDS} s MISSED (not settled)"
            )
        else:
            verdict = "ok" if settled <= SETTLE_GOAL_SECONDS else "MISSED"
            if verdict != "ok":
                missed.append("settled within 3 minutes of the last fault")
            print(
                f"{'time from the last fault until nothing is late':52}{f'{settled:.0f} s':>10}"
                f"  ≤{SETTLE_GOAL_SECONDS} s {verdict}"
            )
        self.details(figures, started)
        print()
        print("Goals missed: " + "; ".join(missed) if missed else "Every goal met.")
        return 1 if missed else 0

    def details(self, figures: dict, started: float) -> None:
        if self.ledger.server_errors:
            print("\n5xx by cause:")
            for (status, route, why), n in self.ledger.server_errors.most_common(20):
                print(f"  {n:>4} × {status} {route}: {why}")
            if exceptions := web_log_exceptions(self.services["web"].log):
                print("  what the web log says raised them:")
                for what, n in exceptions.most_common(8):
                    print(f"  {n:>4} × {what}")
        if self.ledger.no_answer:
            print("\nNo answer (connection refused, timed out):")
            for what, n in self.ledger.no_answer.most_common(10):
                print(f"  {n:>4} × {what}")
        if self.ledger.client_errors:
            print("\n4xx (expected under load: allowances, a full pool; listed for a look):")
            for (status, route, why), n in self.ledger.client_errors.most_common(8):
                print(f"  {n:>4} × {status} {route}: {why}")
        for label, key in (
            ("Stuck clusters", "stuck_rows"),
            ("The cluster longest to provision (UTC)", "slowest"),
            ("The cluster longest deleting (UTC)", "slowest_deletion"),
            ("Lost writes", "lost"),
            ("Duplicate cloud clusters", "duplicate_names"),
            ("Orphaned cloud clusters", "orphan_names"),
            ("In service in the portal, absent from the cloud", "phantoms"),
        ):
            if figures.get(key):
                print(f"\n{label}:")
                for row in figures[key][:15]:
                    print(f"  {row}")
        health = figures["health"]
        print(
            "\nFaults (t: seconds after the load started, UTC; /healthz?deep=1 asked every "
            f"{HEALTH_EVERY:g} s: named N s after the start, cleared N s after the end):"
        )
        offset = time.time() - time.monotonic()
        for (fault, began, ended, note), (_, named, cleared) in zip(health["spans"], health["verdicts"], strict=True):
            utc = time.strftime("%H:%M:%S", time.gmtime(began + offset))
            if NAMES[fault.kind] is None:
                said = "not judged (over at once)"
            elif named is None and ended - began < NAME_WITHIN:
                said = f"over in {ended - began:.0f} s, before it could be named (not judged)"
            elif named is None:
                said = f"never named '{NAMES[fault.kind]}' (lasted {ended - began:.0f} s)"
            else:
                gone = f"cleared in {cleared:.0f} s" if cleared is not None else "never cleared"
                said = f"named in {named:.0f} s, {gone}"
            print(f"  t={began - started:>5.0f} {utc}  {fault.kind:<17} {note}; {said}")
        if health["outage_answers"]:
            outage = sorted(health["outage_answers"].items())
            answers = ", ".join(f"{n} × {status or 'no answer'}" for status, n in outage)
            print(f"\nAPI answers while PostgreSQL was down: {answers}")
        if health["false_alarms"]:
            print("\nDeep health alarms outside any fault (t, status, problems):")
            for when, status, problems in health["false_alarms"][:15]:
                print(f"  t={when - started:>5.0f} {status}: {'; '.join(problems)[:160]}")
        print("\nProcess exits (restarted after 2 s, as restart: always):")
        for service in self.services.values():
            by_fault = sum(1 for _, _, killed in service.exits if killed)
            own = [code for _, code, killed in service.exits if not killed]
            text = f"  {service.name:<7} {by_fault} killed by a fault"
            if own:
                text += f", {len(own)} exited by themselves (exit codes {collections.Counter(own).most_common()})"
            print(text)

    def clean_up(self) -> None:
        self.stop_load.set()
        self.stop_watch.set()
        for service in self.services.values():
            service.stop()
        self.infra.stop()
        if os.environ.get("CHAOS_KEEP") == "1":
            print(f"chaos: kept {self.folder} (CHAOS_KEEP=1)")
        else:
            shutil.rmtree(self.folder, ignore_errors=True)


def longest_in_flight(events, *, now, statuses=IN_FLIGHT) -> tuple[float, int | None]:
    """The longest time one cluster spent in `statuses` (by default requested, provisioning or deleting) in a row
    (seconds), and which; an episode still open counts until `now`. `events`: (cluster id, status it moved to,
    when), in time order."""
    since: dict[int, object] = {}
    longest: tuple[float, int | None] = (0.0, None)
    for cluster_id, status, at in [*events, *((pk, "(now)", now) for pk in {e[0] for e in events})]:
        if status in statuses:
            since.setdefault(cluster_id, at)
        elif cluster_id in since:
            seconds = (at - since.pop(cluster_id)).total_seconds()
            longest = max(longest, (seconds, cluster_id), key=lambda pair: pair[0])
    return longest


def web_log_exceptions(log: Path) -> collections.Counter:
    """The last exception of each chain of tracebacks in the web log (one per request that answered 500)."""
    found: collections.Counter = collections.Counter()
    in_traceback, last = False, None
    for line in [*log.read_text(errors="replace").splitlines(), "(end)"]:
        if line.startswith("Traceback (most recent call last)"):
            in_traceback = True
        elif line.startswith(("During handling of the above", "The above exception was")):
            last = None  # the next traceback of the chain has the last word
        elif in_traceback and line and not line.startswith((" ", "\t")):
            in_traceback, last = False, line[:140]
        elif not in_traceback and line and last is not None:
            found[last] += 1
            last = None
    return found


# --- The figures, read in the portal's environment (`--collect`) ---------------------------------------------


def collect(writes_path: str) -> dict:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
    sys.path.insert(0, str(ROOT))
    import django
    import django.utils.timezone

    django.setup()
    from portal.cloud import AccountAccess, session_for
    from tenants.capacity import ledger
    from tenants.models import Allocation, CapacityPool, CapacityRequest
    from workloads.clusters.models import Cluster, ClusterEvent
    from workloads.support.models import CaseEvent

    def timeline(cluster) -> str:
        """The portal's side of the story, UTC: when each status began."""
        events = ClusterEvent.objects.filter(cluster=cluster).exclude(to_status="").order_by("pk")
        return "; " + ", ".join(f"{e.to_status} {e.created_at:%H:%M:%S}" for e in events)

    clusters = {c.pk: c for c in Cluster.objects.select_related("organization")}
    by_status = collections.Counter(c.status for c in clusters.values())
    # What the emulator holds: every organization's account, every region a cluster went to.
    cloud: list[str] = []
    regions = {c.region for c in clusters.values()} or {"us-east-1"}
    for organization in {c.organization for c in clusters.values()}:
        for region in sorted(regions):
            client = session_for(AccountAccess.for_organization(organization, region)).client("sagemaker")
            for page in client.get_paginator("list_clusters").paginate():
                cloud += [s["ClusterName"] for s in page["ClusterSummaries"]]
    per_cluster: dict[int, list[str]] = collections.defaultdict(list)
    orphans = []
    for name in cloud:
        match = re.match(r"^fmp-(\d+)-", name)
        row = clusters.get(int(match.group(1))) if match else None
        if row is None or row.status not in LIVE:
            orphans.append(f"{name} (portal: {row.status if row else 'no row'}{timeline(row) if row else ''})")
        else:
            per_cluster[row.pk].append(name)
    duplicates = {pk: names for pk, names in per_cluster.items() if len(names) > 1}
    phantoms = [
        f"cluster {c.pk} {c.cloud_name}"
        for c in clusters.values()
        if c.status in ("in_service", "degraded") and c.cloud_name not in cloud
    ]
    # Every write answered 2xx, read again.
    lost = []
    for write in json.loads(Path(writes_path).read_text()):
        kind, pk = write["kind"], write["id"]
        if kind == "cluster_created":
            ok = pk in clusters
        elif kind == "cluster_deleted":
            ok = pk in clusters and clusters[pk].status in ("deleting", "deleted", "failed")
        elif kind == "case_comment":
            ok = CaseEvent.objects.filter(pk=pk, case_id=write["case"], body=write["body"]).exists()
        elif kind == "request_submitted":
            ok = CapacityRequest.objects.filter(pk=pk).exclude(status="draft").exists()
        elif kind == "request_approved":
            ok = Allocation.objects.filter(pk=write["allocation"], request_id=pk).exists()
        elif kind == "request_rejected":
            ok = CapacityRequest.objects.filter(pk=pk, status="rejected").exists()
        else:
            ok = False
        if not ok:
            lost.append(write)
    # The pool invariant, from the allocations themselves (a sweep per pool), and the ledger against them.
    allocatable = {p.pk: p.allocatable_instances for p in CapacityPool.objects.all()}
    over = [(pool, day, n) for (pool, day), n in ledger.expected().items() if n > allocatable[pool]]
    events = ClusterEvent.objects.exclude(to_status="").order_by("created_at", "pk")
    moves = list(events.values_list("cluster_id", "to_status", "created_at"))
    now = django.utils.timezone.now()
    # Item 8's goal is about provisioning (a worker killed mid-provision: in service within 3 minutes); a deletion
    # waits out an AWS outage by design, so it is printed beside, not judged.
    slowest, slowest_id = longest_in_flight(moves, now=now, statuses=PROVISIONING)
    deleting, deleting_id = longest_in_flight(moves, now=now, statuses=("deleting",))
    return {
        "slowest_seconds": round(slowest),
        "slowest": [f"cluster {slowest_id}: {round(slowest)} s{timeline(clusters[slowest_id])}"] if slowest_id else [],
        "slowest_deletion_seconds": round(deleting),
        "slowest_deletion": (
            [f"cluster {deleting_id}: {round(deleting)} s{timeline(clusters[deleting_id])}"] if deleting_id else []
        ),
        "created": len(clusters),
        "by_status": dict(by_status),
        "stuck": sum(by_status[s] for s in IN_FLIGHT),
        "stuck_rows": [
            f"cluster {c.pk} {c.status} since {c.status_changed_at:%H:%M:%S}: {c.last_error or c.status_message}"[:160]
            for c in clusters.values()
            if c.status in IN_FLIGHT
        ],
        "duplicates": sum(len(names) - 1 for names in duplicates.values()),
        "duplicate_names": [f"cluster {pk}: {', '.join(names)}" for pk, names in duplicates.items()],
        "orphans": len(orphans),
        "orphan_names": orphans,
        "phantoms": phantoms,
        "lost": lost,
        "overcommitted_pool_days": len(over),
        "ledger_differences": len(ledger.differences()),
    }


# --- Entry point ---------------------------------------------------------------------------------------------


class Ceiling(Exception):
    pass


def number(name: str, default: str, kind=float):
    value = os.environ.get(name, "") or default
    try:
        return kind(value)
    except ValueError:
        raise SystemExit(f"chaos: {name} must be a number, not {value!r}") from None


def main() -> int:
    if sys.argv[1:2] == ["--collect"]:
        print(json.dumps(collect(sys.argv[2]), default=str))
        return 0
    minutes = number("MINUTES", "10")
    seed = number("SEED", "1", int)
    faults = number("FAULTS", "-1", int)
    settle = number("SETTLE_MINUTES", "5")
    if minutes <= 0 or settle <= 0:
        raise SystemExit("chaos: MINUTES and SETTLE_MINUTES must be above 0")
    for tool in ("redis-server",):
        if not shutil.which(tool):
            raise SystemExit(f"chaos: {tool} not found (apt-get install redis-server)")
    run = Run(minutes=minutes, seed=seed, faults=None if faults < 0 else faults, settle_minutes=settle)
    # The hard ceiling: setting up, the load, the wait and the report, whatever hangs.
    ceiling = int(300 + minutes * 60 + settle * 60 + 300)

    def stop(signum, frame):
        raise Ceiling() if signum == signal.SIGALRM else KeyboardInterrupt()

    for sig in (signal.SIGALRM, signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, stop)
    signal.alarm(ceiling)
    try:
        return run.execute()
    except Ceiling:
        print(f"chaos: the run hit its hard ceiling ({ceiling} s): stopped", file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        print("chaos: interrupted", file=sys.stderr)
        return 130
    except SystemExit as failed:  # setting up failed (a message naming the log): not a missed goal
        print(failed, file=sys.stderr)
        return 2
    finally:
        signal.alarm(0)
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)  # a second Ctrl-C must not leave the clean-up half done
        run.clean_up()


if __name__ == "__main__":
    sys.exit(main())
