"""The production image, replayed. Docker is not on these machines, so this test reads the Dockerfile and
docker-compose.yml and does what they say: each Dockerfile step in a clean copy of the tree (the tracked files,
less .dockerignore), then the `web` service's command — migrate, then gunicorn — with the environment compose gives
`web`, on this machine's PostgreSQL and Redis; then it fetches what a person and a script would. A change to either
file is covered: the replay fails on an instruction it does not know rather than skip it.

Where the replay departs from Docker, and why:
- Paths: the image's WORKDIR (/app) is a folder of a scratch directory standing for the image's /; every mention of
  it in the steps, ENV and the command is rewritten to that folder.
- `apt-get install`: the packages must already be on this machine (postgresql-client: its pg_dump and pg_restore);
  nothing is installed.
- `pip install`: the test runs in the venv the requirements were installed into; the step is replayed as
  `pip install --dry-run --no-index`, which succeeds only when every pinned requirement is already satisfied (it
  cannot download), so the venv stands for the image's site-packages only if it holds what the image would.
- The image's user: `useradd` would change this machine's accounts, so the image's user is played by `nobody`
  (when the test runs as root: a `chown` to the image's user is a `chown` to it, and every step after USER and the
  server run as it, through setpriv), or by the test's own user when it is not root (it cannot switch users then).
  Where the machine's Python lies out of nobody's reach (pyenv under /root), nobody keeps the right to read any file
  and the files' modes are checked instead (_stand_in_user).
- The compose network: the service names `postgres` and `redis` become this machine's servers (a database made
  for the test), the published port 8000 a free port on the loopback.
- The TLS proxy compose expects in front (BEHIND_TLS_PROXY and SECURE_SSL_REDIRECT keep compose's defaults, True):
  requests carry the proxy's `X-Forwarded-Proto: https` and the cookies a browser would send over HTTPS.

It skips locally when PostgreSQL or Redis is not reachable, never in CI (`CI` set).
"""

import contextlib
import fnmatch
import grp
import http.client
import http.cookies
import json
import os
import pwd
import re
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import pytest
import yaml
from django.conf import settings

from tests.environment import unavailable
from tests.servers import free_port

ROOT = Path(settings.BASE_DIR)
VENV_BIN = Path(sys.executable).parent
# Docker's default PATH for a Linux image, behind the venv that stands for the image's site-packages.
IMAGE_PATH = f"{VENV_BIN}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
START_TIMEOUT = 240  # migrate on an empty database, then gunicorn's workers, on a loaded two-core machine
STEP_TIMEOUT = 300


# --- Reading the two files ------------------------------------------------------------------------------------


def dockerfile_steps(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) per step; continuation lines joined and comments dropped, as Docker does."""
    steps, pending = [], None
    for line in text.splitlines():
        if line.strip().startswith("#") or (pending is None and not line.strip()):
            continue  # Docker drops comment lines, inside a continued instruction too
        pending = line if pending is None else pending + line
        if pending.rstrip().endswith("\\"):
            pending = pending.rstrip()[:-1]
            continue
        instruction, _, arguments = pending.strip().partition(" ")
        steps.append((instruction.upper(), arguments.strip()))
        pending = None
    return steps


def _exec_or_shell(arguments: str) -> list[str]:
    """RUN/CMD: the JSON (exec) form as it is, the shell form under /bin/sh -c."""
    if arguments.startswith("["):
        return json.loads(arguments)
    return ["/bin/sh", "-c", arguments]


def compose_interpolate(value: str, operator_env: dict[str, str]) -> str:
    """docker compose's ${NAME}, ${NAME:-default}, ${NAME-default}, ${NAME:?error}, ${NAME?error} and $$."""

    def one(match: re.Match) -> str:
        if match.group(0) == "$$":
            return "$"
        name, op, arg = match.group(1), match.group(2), match.group(3)
        value = operator_env.get(name)
        if op in (":-", ":?") and not value:
            value = None
        if value is None:
            if op in ("?", ":?"):
                raise AssertionError(f"compose refuses to start without {name}: {arg}")
            return arg or ""
        return value

    return re.sub(r"\$\$|\$\{(\w+)(?:(:?[-?])([^}]*))?\}", one, value)


# --- The image -------------------------------------------------------------------------------------------------


@dataclass
class Image:
    root: Path  # stands for the image's /
    workdir: str  # as the Dockerfile says it (/app)
    env: dict[str, str]  # the image's ENV, paths rewritten
    user: str  # the Dockerfile's USER
    cmd: list[str]
    exposed: str
    as_user: list[str] = field(default_factory=list)  # the prefix that runs a command as the image's user
    stand_in: pwd.struct_passwd | None = None  # who plays the image's user here
    home: Path | None = None  # the image's user's home
    workdir_host: Path | None = None  # where the steps left off: the command runs there

    def host_path(self, path: str) -> Path:
        return self.root / path.lstrip("/")

    def rewrite(self, text: str) -> str:
        """The image's paths under WORKDIR, as they are on this machine."""
        return re.sub(
            rf"(?<![\w./-]){re.escape(self.workdir)}(?=[/\s\"':;]|$)", str(self.host_path(self.workdir)), text
        )


def _tracked_files() -> list[str]:
    """What `docker build .` sends from a fresh clone: the tracked files, less .dockerignore's patterns."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True).stdout
    if not listed:  # not a git checkout (an unpacked archive): the whole tree, as `docker build .` would send it
        listed = b"\0".join(str(p.relative_to(ROOT)).encode() for p in ROOT.rglob("*") if p.is_file())
    ignore = [
        line.strip().rstrip("/")
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]

    def ignored(path: str) -> bool:
        parts = path.split("/")
        prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        return any(
            fnmatch.fnmatch(prefix, pattern) or fnmatch.fnmatch(prefix, pattern.removeprefix("**/"))
            for pattern in ignore
            for prefix in prefixes + parts
        )

    # A file deleted in the working tree but not yet in git is not in the context either.
    return [path for path in listed.decode().split("\0") if path and not ignored(path) and (ROOT / path).exists()]


def _stand_in_user(image_root: Path) -> tuple[pwd.struct_passwd, list[str]]:
    """Who plays the image's user, and the command prefix that runs a command as them."""
    if os.geteuid() != 0:
        return pwd.getpwuid(os.geteuid()), []  # already not root; it cannot switch users
    nobody = pwd.getpwnam("nobody")
    as_nobody = ["setpriv", f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}", "--clear-groups"]
    # Where the machine's Python lives under /root (pyenv; mode 700) nobody cannot start it: it then keeps one
    # capability, reading any file (CAP_DAC_READ_SEARCH). Writes are still checked as in the image, and
    # test_every_file_of_the_image_is_readable_by_its_user checks reads by the files' modes.
    read_anything = ["--inh-caps=+dac_read_search", "--ambient-caps=+dac_read_search"]
    for prefix in (as_nobody, as_nobody + read_anything):
        probe = subprocess.run(
            [*prefix, "--", sys.executable, "-c", "import django"], cwd=image_root, capture_output=True
        )
        if probe.returncode == 0:
            return nobody, [*prefix, "--"]
    warnings.warn(f"the image's user is played by root: {probe.stderr.decode()[-300:]}", stacklevel=1)
    return pwd.getpwuid(0), []


def _prelude(*, image_user: str, stand_in: str, stand_in_group: str, image: Image) -> str:
    """Shell functions every RUN step starts with: the departures the module docstring lists."""
    home = image.host_path("/home")
    return f"""
useradd() {{ for name; do :; done; mkdir -p "{home}/$name" && command chown {stand_in} "{home}/$name"; }}
chown() {{
  for a; do shift
    case "$a" in {image_user}) a={stand_in} ;; {image_user}:{image_user}) a={stand_in}:{stand_in_group} ;; esac
    set -- "$@" "$a"
  done
  command chown "$@"
}}
pip() {{
  if [ "$1" = install ]; then shift; command pip install --dry-run --no-index --quiet --disable-pip-version-check "$@"
  else echo "the replay knows only pip install, not: pip $*" >&2; return 2; fi
}}
"""


# `apt-get` in a RUN step: a command of that name first on the step's PATH (a shell function cannot have a hyphen in
# its name under /bin/sh). Nothing is installed: the packages must already be on this machine.
APT_GET = """#!/bin/sh
case "$1" in
  update) exit 0 ;;
  install) shift; for package; do case "$package" in
    -*) ;;
    postgresql-client) command -v pg_dump >/dev/null && command -v pg_restore >/dev/null \\
      || { echo "the replay needs pg_dump and pg_restore on this machine" >&2; exit 1; } ;;
    *) dpkg -s "$package" >/dev/null 2>&1 || { echo "the replay needs $package on this machine" >&2; exit 1; } ;;
  esac; done ;;
  *) echo "the replay knows only apt-get update and install, not: apt-get $*" >&2; exit 2 ;;
esac
"""


def build_image(context: Path, root: Path) -> Image:
    """Replays the Dockerfile's steps, in order, into root."""
    text = (context / "Dockerfile").read_text()
    steps = dockerfile_steps(text)
    workdirs = [arguments for instruction, arguments in steps if instruction == "WORKDIR"]
    users = [arguments for instruction, arguments in steps if instruction == "USER"]
    assert len(workdirs) == 1 and workdirs[0].startswith("/"), "the replay knows one absolute WORKDIR"
    assert len(users) == 1, "the replay knows one USER"
    assert re.search(rf"\buseradd\b[^&;\n]*\b{re.escape(users[0])}\b", text), "USER names a user the image creates"
    # pip must go through the `pip install` the replay turns into a check, never install into the shared venv.
    assert not re.search(r"python[\d.]*\s+-m\s+pip", text), "the replay knows `pip install`, not `python -m pip`"
    image = Image(root=root, workdir=workdirs[0], env={}, user=users[0], cmd=[], exposed="")
    (root / "root").mkdir(parents=True)
    root.chmod(0o755)
    stand_in, as_user = _stand_in_user(root)
    image.stand_in = stand_in
    prelude = _prelude(
        image_user=image.user,
        stand_in=stand_in.pw_name,
        stand_in_group=grp.getgrgid(stand_in.pw_gid).gr_name,
        image=image,
    )
    cwd = image.host_path("/")
    shims = root / "replay-bin"
    shims.mkdir()
    (shims / "apt-get").write_text(APT_GET)
    (shims / "apt-get").chmod(0o755)
    current_user: list[str] = []  # root until USER
    for instruction, arguments in steps:
        if instruction == "FROM":
            match = re.fullmatch(r"python:(\d+\.\d+)(-[\w.-]+)?", arguments)
            assert match, f"the replay knows python base images, not {arguments}"
            if match.group(1) != f"{sys.version_info.major}.{sys.version_info.minor}":
                warnings.warn(f"the image's Python is {match.group(1)}, this venv's {sys.version}", stacklevel=1)
        elif instruction == "ENV":
            pairs = shlex.split(arguments)
            if "=" not in pairs[0]:  # the legacy `ENV NAME value` form
                pairs = [f"{pairs[0]}={' '.join(pairs[1:])}"]
            for pair in pairs:
                name, _, value = pair.partition("=")
                image.env[name] = image.rewrite(value)
        elif instruction == "WORKDIR":
            cwd = image.host_path(arguments)
            cwd.mkdir(parents=True, exist_ok=True)
        elif instruction == "COPY":
            *sources, destination = shlex.split(arguments)
            assert not any(s.startswith("--") for s in sources), f"the replay knows plain COPY, not {arguments}"
            target = cwd / destination if not destination.startswith("/") else image.host_path(destination)
            for source in sources:
                if source == ".":
                    shutil.copytree(context, target, dirs_exist_ok=True, symlinks=True)
                elif destination.endswith("/") or destination == ".":
                    target.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(context / source, target / Path(source).name)
                else:
                    shutil.copy2(context / source, target)
        elif instruction == "RUN":
            command = _exec_or_shell(arguments)
            if command[:2] == ["/bin/sh", "-c"]:
                command = ["/bin/sh", "-c", prelude + image.rewrite(command[2])]
            path = f"{shims}:{IMAGE_PATH}"
            env = {"PATH": path, "HOME": str(image.home or root / "root"), "LANG": "C.UTF-8", **image.env}
            done = subprocess.run(
                [*current_user, *command], cwd=cwd, env=env, capture_output=True, text=True, timeout=STEP_TIMEOUT
            )
            assert done.returncode == 0, f"RUN {arguments}\nexited {done.returncode}:\n{done.stdout}{done.stderr}"
        elif instruction == "USER":
            current_user = as_user
            image.as_user = as_user
            image.home = image.host_path(f"/home/{image.user}")
        elif instruction == "EXPOSE":
            image.exposed = arguments
        elif instruction == "CMD":
            image.cmd = _exec_or_shell(arguments)
        else:
            pytest.fail(f"the replay does not know the Dockerfile instruction {instruction}: teach it")
    image.workdir_host = cwd
    return image


# --- The machine's services ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def database_url():
    """A PostgreSQL database of the test's own, dropped at the end."""
    import psycopg

    base = os.environ.get("DATABASE_URL", "")
    if not base.startswith(("postgres://", "postgresql://")):
        base = "postgres://postgres@127.0.0.1:5432/postgres"
    parts = urlsplit(base)
    admin_url = parts._replace(path="/postgres").geturl()
    name = f"portal_image_{secrets.token_hex(4)}"
    try:
        admin = psycopg.connect(admin_url, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError as error:
        unavailable(f"no PostgreSQL at {parts.hostname}:{parts.port}: {error}")
    with admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        try:
            yield parts._replace(path=f"/{name}").geturl()
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="module")
def broker_url() -> str:
    import redis

    url = os.environ.get("CELERY_BROKER_URL", "")
    url = url if url.startswith("redis://") else "redis://127.0.0.1:6379/14"
    try:
        redis.Redis.from_url(url, socket_connect_timeout=2).ping()
    except redis.ConnectionError as error:
        unavailable(f"no Redis at {url}: {error}")
    return url


# --- Serving it ------------------------------------------------------------------------------------------------


@dataclass
class Browser:
    """A browser behind the TLS proxy: every request says X-Forwarded-Proto https, and Secure cookies go back."""

    port: int
    cookies: dict[str, str] = field(default_factory=dict)

    def request(self, method: str, path: str, *, body: dict | None = None, proxy: bool = True, **headers):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        headers = {"Host": f"127.0.0.1:{self.port}", **headers}
        if proxy:
            headers["X-Forwarded-Proto"] = "https"
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        data = None
        if body is not None:
            data = urlencode(body)
            headers |= {
                "Content-Type": "application/x-www-form-urlencoded",
                # What a browser sends with a form posted on the same HTTPS origin: Django's CSRF check reads it.
                "Origin": f"https://127.0.0.1:{self.port}",
                "Referer": f"https://127.0.0.1:{self.port}{path}",
            }
        connection.request(method, path, body=data, headers=headers)
        response = connection.getresponse()
        content = response.read()
        connection.close()
        for header in response.headers.get_all("Set-Cookie") or []:
            for name, morsel in http.cookies.SimpleCookie(header).items():
                self.cookies[name] = morsel.value
        return response.status, response.headers, content

    def get(self, path: str, **headers):
        return self.request("GET", path, **headers)


@dataclass
class Served:
    image: Image
    browser: Browser
    env: dict[str, str]
    log: Path
    process: subprocess.Popen
    healthcheck: list[str] = field(default_factory=list)  # compose's health check of web

    def manage(self, *args: str, env: dict | None = None) -> str:
        done = subprocess.run(
            [*self.image.as_user, "python", "manage.py", *args],
            cwd=self.image.workdir_host,
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=STEP_TIMEOUT,
        )
        assert done.returncode == 0, f"manage.py {' '.join(args)}: {done.stdout}{done.stderr}"
        return done.stdout

    def manifest(self) -> dict[str, str]:
        """collectstatic's manifest in the image: each static file's name, and its name with its content's hash."""
        static_root = Path(self.image.env["PORTAL_VAR_DIR"]) / "staticfiles"
        return json.loads((static_root / "staticfiles.json").read_text())["paths"]

    def log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]


@pytest.fixture(scope="module")
def served(database_url, broker_url):
    scratch = Path(tempfile.mkdtemp(prefix="portal-image-"))
    scratch.chmod(0o755)  # the image's user must reach it
    try:
        yield from _serve(scratch, database_url, broker_url)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _serve(scratch: Path, database_url: str, broker_url: str):
    context = scratch / "context"
    for path in _tracked_files():
        (context / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / path, context / path, follow_symlinks=False)
    image = build_image(context, scratch / "image")

    compose = yaml.safe_load((context / "docker-compose.yml").read_text())
    web = compose["services"]["web"]
    # The operator's environment (or .env): only what compose insists on; every other variable keeps its default.
    operator_env = {"SECRET_KEY": secrets.token_urlsafe(48)}
    compose_env = {name: compose_interpolate(str(value), operator_env) for name, value in web["environment"].items()}
    # The compose network's service names, replaced by this machine's servers.
    assert urlsplit(compose_env["DATABASE_URL"]).hostname == "postgres"
    assert urlsplit(compose_env["CELERY_BROKER_URL"]).hostname == "redis"
    compose_env |= {"DATABASE_URL": database_url, "CELERY_BROKER_URL": broker_url}

    port = free_port()
    container_port = image.exposed.split("/")[0]
    assert web["ports"][0].split(":")[-1] == container_port, (web["ports"], image.exposed)

    def published(text: str) -> str:  # the container's port, published by compose, is a free port here
        return re.sub(rf"\b(0\.0\.0\.0|127\.0\.0\.1|localhost):{container_port}\b", f"127.0.0.1:{port}", text)

    command = web.get("command") or image.cmd  # compose's command replaces the image's CMD
    command = shlex.split(command) if isinstance(command, str) else list(command)
    command = [published(image.rewrite(arg)) for arg in command]
    env = {"PATH": IMAGE_PATH, "LANG": "C.UTF-8", "HOME": str(image.home), **image.env, **compose_env}

    log = scratch / "web.log"
    process = subprocess.Popen(
        [*image.as_user, *command],
        cwd=image.workdir_host,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    served = Served(image=image, browser=Browser(port), env=env, log=log, process=process)
    served.healthcheck = [published(arg) for arg in web["healthcheck"]["test"]]
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if process.poll() is not None:
                pytest.fail(f"web exited with {process.returncode}:\n{served.log_tail()}")
            with contextlib.suppress(OSError):
                if served.browser.get("/healthz", proxy=False)[0] in (200, 503):
                    break
            if time.monotonic() > deadline:
                pytest.fail(f"web did not answer /healthz in {START_TIMEOUT} s:\n{served.log_tail()}")
            time.sleep(1)
        yield served
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@pytest.fixture(scope="module")
def manager_browser(served) -> Browser:
    """A program manager the test creates, logged in through the login form."""
    password = secrets.token_urlsafe(16)
    served.manage(
        "shell",
        "-c",
        "import os; from django.contrib.auth.models import User; from tenants.models import StaffRole; "
        "user = User.objects.create_user('image-manager', password=os.environ['TEST_PASSWORD'], is_staff=True, "
        "is_superuser=True); StaffRole.objects.create(user=user, role=StaffRole.Role.PROGRAM_MANAGER)",
        env={"TEST_PASSWORD": password},
    )
    browser = Browser(served.browser.port)
    status, _, page = browser.get("/login/")
    assert status == 200, page[:2000]
    token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1).decode()
    status, headers, page = browser.request(
        "POST", "/login/", body={"username": "image-manager", "password": password, "csrfmiddlewaretoken": token}
    )
    assert status == 302, (status, page[:2000])
    assert "sessionid" in browser.cookies
    return browser


# --- What a person and a script fetch --------------------------------------------------------------------------


def test_the_image_runs_the_compose_health_check_as_its_user(served):
    done = subprocess.run(
        [*served.image.as_user, *served.healthcheck[1:]],  # ["CMD", …]
        cwd=served.image.workdir_host,
        env=served.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr + served.log_tail()


def test_every_file_of_the_image_is_readable_by_its_user(served):
    """What the steps left under WORKDIR, as its user's permissions read it (by the modes: see _stand_in_user)."""
    user = served.image.stand_in
    unreadable = []
    for folder, _, files in os.walk(served.image.workdir_host):
        for path in [Path(folder), *(Path(folder) / name for name in files)]:
            status = path.lstat()
            if path.is_symlink():
                continue
            if status.st_uid == user.pw_uid:
                bits = status.st_mode >> 6
            elif status.st_gid == user.pw_gid:
                bits = status.st_mode >> 3
            else:
                bits = status.st_mode
            needed = 0o5 if path.is_dir() else 0o4  # a folder: list and enter; a file: read
            if user.pw_uid != 0 and bits & needed != needed:
                unreadable.append(str(path.relative_to(served.image.root)))
    assert not unreadable, unreadable[:20]
    var = Path(served.image.env["PORTAL_VAR_DIR"])
    assert var.stat().st_uid == user.pw_uid, "the image's user owns its var folder"


def test_the_login_page_renders_with_hashed_static_files(served):
    status, headers, page = served.browser.get("/login/")
    assert status == 200, served.log_tail()
    assert headers["Content-Type"].startswith("text/html")
    assert b'name="password"' in page
    # collectstatic's manifest names each file by its content's hash; the page links those names.
    manifest = served.manifest()
    for name in ("img/favicon.svg", "css/portal.css", "js/portal.js"):
        assert manifest[name] != name
        assert f"/static/{manifest[name]}".encode() in page, name


def test_a_hashed_static_file_is_served_for_a_year(served):
    manifest = served.manifest()
    for name, content_type in (("img/favicon.svg", "image/svg+xml"), ("css/portal.css", "text/css")):
        status, headers, body = served.browser.get(f"/static/{manifest[name]}")
        assert status == 200, name
        assert headers["Content-Type"].startswith(content_type)
        assert "immutable" in headers["Cache-Control"]  # WhiteNoise: the name changes with the content
        assert body == (ROOT / "static" / name).read_bytes()


def test_the_charting_library_is_served_compressed_for_a_year(served):
    """ECharts, the largest static file (1.1 MB), goes over the wire in gzip (368 KB) under its hashed name, marked
    immutable: a browser fetches it once."""
    name = served.manifest()["vendor/echarts/echarts-6.1.0.min.js"]
    status, headers, body = served.browser.get(f"/static/{name}", **{"Accept-Encoding": "gzip"})
    assert status == 200 and headers["Content-Encoding"] == "gzip" and "immutable" in headers["Cache-Control"]
    assert len(body) < 400_000


def test_plain_http_is_sent_to_https_except_health(served):
    status, headers, _ = served.browser.get("/login/", proxy=False)
    assert status == 301 and headers["Location"].startswith("https://")
    assert served.browser.get("/healthz", proxy=False)[0] in (200, 503)  # the container's own health check


def test_a_page_behind_login_renders(served, manager_browser):
    assert served.browser.get("/")[0] == 302  # not logged in: to the login page
    status, headers, _ = manager_browser.get("/")
    assert status == 302  # a program manager lands on the program overview
    status, headers, page = manager_browser.get(headers["Location"])
    assert status == 200, served.log_tail()
    assert headers["Content-Type"].startswith("text/html")
    assert b"image-manager" in page
    status, _, page = manager_browser.get("/admin/")
    assert status == 200, served.log_tail()


def test_the_api_schema_is_served(served):
    status, headers, body = served.browser.get("/api/schema/?format=json")
    assert status == 200, served.log_tail()
    schema = json.loads(body)
    assert schema["openapi"].startswith("3.") and "/api/v1/organizations/" in schema["paths"]


def test_deep_health_renders_a_page(served):
    """Whatever the workers (none run here) and the cloud say, the page check renders a template through the
    static files storage: it is what failed when the image had no manifest."""
    status, _, body = served.browser.get("/healthz?deep=1")
    answer = json.loads(body)
    assert answer["database"] == "ok"
    assert answer["pages"] == "ok", answer
    assert status == (200 if answer["status"] == "ok" else 503)


def test_connections_the_database_dropped_are_not_a_500(served, manager_browser, database_url):
    """PostgreSQL ends every connection of the portal's database (a restart, a failover): the next requests are
    answered on fresh connections — none is a 500."""
    import psycopg

    name = urlsplit(database_url).path.lstrip("/")
    admin_url = urlsplit(database_url)._replace(path="/postgres").geturl()
    with psycopg.connect(admin_url, autocommit=True) as admin:
        ended = admin.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = %s", [name]
        ).fetchone()[0]
    assert ended >= 1  # gunicorn's workers keep their connections (CONN_MAX_AGE)
    statuses = [manager_browser.get("/")[0] for _ in range(6)] + [served.browser.get("/login/")[0]]
    assert statuses == [302] * 6 + [200], served.log_tail()
