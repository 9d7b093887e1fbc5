#!/usr/bin/env python3
"""fmp-reporter: tells the FM Program Portal what a Slurm cluster knows (jobs, nodes, GPU health).

Runs on the head node of a SageMaker HyperPod (Slurm) or AWS ParallelCluster cluster: one file,
Python 3.7 or later, standard library only. Below, replace https://portal.example.org and the
cluster id 42 with the values on the cluster's page in the portal. Commands start at the margin so
they paste as they are.

1. The script, a user to run it as, and its settings (cron, systemd and the script read this file).
   Leave out FMP_DCGM_PORT if the nodes run no dcgm-exporter. The user must be allowed to run
   `sacct -a`: any user is, unless slurm.conf sets PrivateData=jobs (then run it as root).

sudo useradd --system --no-create-home --shell /usr/sbin/nologin fmp-reporter
sudo install -d -m 755 /opt/fmp-reporter /etc/fmp-reporter
sudo install -m 644 fmp_reporter.py /opt/fmp-reporter/fmp_reporter.py
sudo tee /etc/fmp-reporter/env >/dev/null <<'EOF'
FMP_PORTAL_URL=https://portal.example.org
FMP_CLUSTER_ID=42
FMP_INTERVAL=300
FMP_DCGM_PORT=9400
EOF

2. The token shown on the cluster's page: run this, paste the token, press Enter, then Ctrl-D.

sudo install -m 600 -o fmp-reporter /dev/stdin /etc/fmp-reporter/token

3. Try it, sending nothing, then for real:

sudo -u fmp-reporter python3 /opt/fmp-reporter/fmp_reporter.py --dry-run run
sudo -u fmp-reporter python3 /opt/fmp-reporter/fmp_reporter.py run

4. EITHER cron, every 5 minutes (output to syslog, tag fmp-reporter):

sudo tee /etc/cron.d/fmp-reporter >/dev/null <<'EOF'
*/5 * * * * fmp-reporter /usr/bin/python3 /opt/fmp-reporter/fmp_reporter.py run 2>&1 | logger -t fmp-reporter
EOF

   OR a systemd timer (logs: journalctl -u fmp-reporter):

sudo tee /etc/systemd/system/fmp-reporter.service >/dev/null <<'EOF'
[Unit]
Description=Report Slurm jobs and GPU health to the FM Program Portal

[Service]
Type=oneshot
User=fmp-reporter
EnvironmentFile=/etc/fmp-reporter/env
ExecStart=/usr/bin/python3 /opt/fmp-reporter/fmp_reporter.py run
TimeoutStartSec=4min
EOF
sudo tee /etc/systemd/system/fmp-reporter.timer >/dev/null <<'EOF'
[Unit]
Description=Run fmp-reporter every 5 minutes

[Timer]
OnBootSec=2min
OnUnitActiveSec=5min

[Install]
WantedBy=timers.target
EOF
sudo systemctl daemon-reload && sudo systemctl enable --now fmp-reporter.timer

FMP_INTERVAL (--interval) must match the schedule, in seconds (every 5 minutes: 300): the portal
marks the reporter silent after 3 intervals without a report.

5. After an nccl-tests run, post its log (`-` reads standard input):

sudo python3 /opt/fmp-reporter/fmp_reporter.py nccl nccl-2node.log --nodes 2

Settings come from the command line, else FMP_* environment variables, else /etc/fmp-reporter/env
(another file: FMP_ENV_FILE). Exit status: 0 all sent; 1 refused by the portal (its message is
printed); 2 the portal unreachable after retries, or a local problem (no sacct, unreadable token).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor

VERSION = "1.0.0"
# The values the guide above uses as examples (the portal's page shows the guide with the real ones).
EXAMPLE_PORTAL = "https://portal.example.org"
EXAMPLE_CLUSTER = "42"
USER_AGENT = "fmp-reporter/" + VERSION
TOKEN_PREFIX = "fmc_"
SHOWN_TOKEN_CHARS = 12  # "fmc_" and 8 more: enough to tell two tokens apart, too few to use one
ENV_FILE = "/etc/fmp-reporter/env"
DEFAULT_TOKEN_FILE = "/etc/fmp-reporter/token"
DEFAULT_INTERVAL = 300
DEFAULT_TIMEOUT = 60
DEFAULT_SINCE_DAYS = 2
DEFAULT_DCGM_PORT = 9400
SCRAPE_TIMEOUT = 5
SCRAPE_WORKERS = 16  # a node that does not answer costs SCRAPE_TIMEOUT; in parallel, once for all
MAX_SCRAPE_BYTES = 20 * 1024 * 1024
SLURM_TIMEOUT = 120  # sacct waits on slurmdbd: a hung one must not pile up runs
# Cron and systemd give a bare PATH; ParallelCluster and HyperPod install Slurm under /opt/slurm.
SLURM_BIN_DIRS = ("/opt/slurm/bin", "/usr/local/bin")
ATTEMPTS = 3
RETRY_BASE_SECONDS = 2.0  # waits 2 s, then 4 s; FMP_RETRY_BASE_SECONDS changes it (tests)
PREVIEW_LINES = 5

# The columns the portal's parser reads, in its order (SACCT_FIELDS in the portal's workloads/jobs/sacct.py).
SACCT_FIELDS = ("JobID", "JobName", "User", "Account", "Partition", "State", "Submit", "Start", "End",
                "ElapsedRaw", "NNodes", "NodeList", "AllocTRES")  # fmt: skip
SINFO_COMMAND = ("sinfo", "-h", "-N", "-o", "%N|%n|%o")  # NodeName|NodeHostName|NodeAddr, per node and partition
# One line per partition: the portal reads OverSubscribe=EXCLUSIVE (whole nodes per job) to count the accelerators
# of a job that names no gres (PARTITIONS_COMMAND in the portal's workloads/jobs/sacct.py).
PARTITIONS_COMMAND = ("scontrol", "show", "partition", "-o")

STATUS_HINTS = {
    401: "the token was not accepted: revoked, mistyped, or not a cluster token",
    403: "the token may not do this",
    404: "no such cluster, or the token belongs to another cluster",
    413: "the report is larger than the portal accepts (20 MB); try a smaller --since-days",
}


class ReporterError(Exception):
    exit_code = 2


class Refused(ReporterError):
    """The portal answered no (4xx): asking again would get the same answer."""

    exit_code = 1

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class Unavailable(ReporterError):
    """The portal did not answer after retries, or something on this host is missing."""

    exit_code = 2


# -- Pure pieces: commands, bodies, parsing -----------------------------------------------------


def sacct_command(since_days: int) -> list[str]:
    return ["sacct", "-a", "-X", "-P", "--format=" + ",".join(SACCT_FIELDS), "--starttime", f"now-{since_days}days"]


def jobs_body(*, sacct: str, sinfo: str, interval_seconds: int, partitions: str | None = None) -> dict:
    # run_slurm() sets TZ=UTC for sacct, so its times (printed without an offset) are UTC.
    body = {"sacct": sacct, "slurm_nodes": sinfo, "timezone": "UTC", "interval_seconds": interval_seconds}
    if partitions is not None:  # absent: the portal keeps what the last report said
        body["slurm_partitions"] = partitions
    return body


def health_body(*, metrics: str, host: str) -> dict:
    return {"metrics": metrics, "host": host}


def nccl_body(*, log: str, nodes: int | None = None, collective: str | None = None) -> dict:
    """The post of an nccl-tests log; `collective` names the test for logs of nccl-tests before 2.16 (no banner)."""
    body: dict = {"log": log}
    if nodes is not None:
        body["nodes"] = nodes
    if collective:
        body["collective"] = collective
    return body


def node_addresses(sinfo: str) -> list[tuple[str, str]]:
    """(node name, address) from `sinfo -h -N -o %N|%n|%o`, once per node, in sinfo's order.

    sinfo prints a node once per partition it is in. Slurm's NodeAddr defaults to the node name;
    an empty or N/A one falls back to the hostname, then to the name."""
    seen: dict[str, str] = {}
    for line in sinfo.splitlines():
        fields = [field.strip() for field in line.split("|")]
        name = fields[0]
        if name and name not in seen:
            found = [field for field in fields[2:3] + fields[1:2] if field and field.upper() != "N/A"]
            seen[name] = found[0] if found else name
    return list(seen.items())


def exporter_url(address: str, port: int) -> str:
    if ":" in address and not address.startswith("["):
        address = "[" + address + "]"  # an IPv6 address
    return f"http://{address}:{port}/metrics"


def mask_token(token: str) -> str:
    return token[:SHOWN_TOKEN_CHARS] + "..."


def portal_message(status: int, payload: bytes) -> str:
    """One line from a refusal: DRF's {"detail": ...} or field errors {"log": ["..."]}, else the text."""
    try:
        data = json.loads(payload.decode("utf-8"))
    except ValueError:
        data = None
    if isinstance(data, dict) and "detail" in data:
        text = str(data["detail"])
    elif isinstance(data, dict):
        text = "; ".join(
            "{}: {}".format(key, " ".join(map(str, value)) if isinstance(value, list) else value)
            for key, value in data.items()
        )
    elif isinstance(data, list):
        text = "; ".join(map(str, data))
    else:
        lines = payload.decode("utf-8", "replace").strip().splitlines()
        text = lines[0][:200] if lines else ""
    hint = STATUS_HINTS.get(status)
    head = f"refused by the portal (HTTP {status}: {hint})" if hint else f"refused by the portal (HTTP {status})"
    return head + (": " + text if text else "")


def describe_request(url: str, body: dict, token: str) -> list[str]:
    """What --dry-run prints: method, URL, size, the token's start, and the first lines of each field."""
    size = len(json.dumps(body).encode("utf-8"))
    lines = [f"POST {url} ({size} bytes, Authorization: Token {mask_token(token)})"]
    for key, value in body.items():
        if isinstance(value, str) and "\n" in value:
            text = value.splitlines()
            lines.append(f"  {key}: {len(text)} lines")
            lines.extend("    " + line[:200] for line in text[:PREVIEW_LINES])
            if len(text) > PREVIEW_LINES:
                lines.append("    ...")
        else:
            lines.append(f"  {key}: {json.dumps(value)}")
    return lines


def load_env_file(path: str) -> dict[str, str]:
    """FMP_* settings from a KEY=VALUE file, the format of systemd's EnvironmentFile=."""
    values: dict[str, str] = {}
    try:
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return values  # no file: the settings come from the command line or the environment
    for line in lines:
        key, sep, value = line.strip().partition("=")
        key = key[len("export ") :].strip() if key.startswith("export ") else key.strip()
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        if sep and key.startswith("FMP_"):
            values[key] = value
    return values


# -- Talking to the portal -----------------------------------------------------------------------


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    # urllib would turn a redirected POST into a GET without its body, and carry the token wherever
    # the redirect points: a redirect is reported instead (--portal needs the final address).
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


def make_opener(ca_file: str | None = None):
    context = ssl.create_default_context(cafile=ca_file)  # certificates are always verified
    return urllib.request.build_opener(urllib.request.HTTPSHandler(context=context), _NoRedirect()).open


def post_json(
    url: str,
    body: dict,
    *,
    token: str,
    opener,
    timeout: float = DEFAULT_TIMEOUT,
    sleep=time.sleep,
    attempts: int = ATTEMPTS,
    base_delay: float = RETRY_BASE_SECONDS,
    log=None,
) -> dict:
    """POST `body` as JSON and return the parsed answer (2xx). Retries connection errors, timeouts,
    429 and 5xx with exponential backoff (`attempts`, `base_delay`); raises Refused on any other
    answer and Unavailable when out of attempts. `opener(request, timeout=)` is urllib's, or a fake."""
    log = log or (lambda message: None)
    data = json.dumps(body).encode("utf-8")
    headers = {"Authorization": "Token " + token, "Content-Type": "application/json", "User-Agent": USER_AGENT}
    last = ""
    for attempt in range(1, attempts + 1):
        started = time.time()
        request = urllib.request.Request(url, data=data, headers=headers, method="POST")  # noqa: S310 (http/https only)
        try:
            with opener(request, timeout=timeout) as response:
                payload = response.read()
            log(f"  -> {response.getcode()} in {time.time() - started:.2f} s")
            try:
                answer = json.loads(payload.decode("utf-8"))
            except ValueError:
                answer = None  # the post went through; only the summary line will lack numbers
            return answer if isinstance(answer, dict) else {}
        except urllib.error.HTTPError as error:
            payload = error.read()
            error.close()
            log(f"  -> {error.code} in {time.time() - started:.2f} s")
            if error.code < 400:  # _NoRedirect followed none
                where = error.headers.get("Location", "?")
                raise Refused(error.code, f"the portal redirected to {where}: use that as --portal") from None
            if error.code != 429 and error.code < 500:
                raise Refused(error.code, portal_message(error.code, payload)) from None
            last = f"HTTP {error.code}"
        except (urllib.error.URLError, OSError, http.client.HTTPException) as error:
            reason = getattr(error, "reason", error)
            if isinstance(reason, ssl.SSLCertVerificationError):  # retrying cannot fix a certificate
                raise Unavailable(
                    f"the portal's certificate is not trusted ({reason.verify_message}); see --ca-file"
                ) from None
            last = str(reason) or type(reason).__name__
            log(f"  -> {last}")
        if attempt < attempts:
            sleep(base_delay * 2 ** (attempt - 1))
    raise Unavailable(f"the portal did not answer after {attempts} attempts: {last}")


class Reporter:
    """One run's sending: where to (the parsed command line), with which token, and how."""

    def __init__(self, args, *, token: str, opener, sleep=time.sleep, base_delay=RETRY_BASE_SECONDS) -> None:
        self.args, self.token, self.opener, self.sleep, self.base_delay = args, token, opener, sleep, base_delay

    def log(self, message: str) -> None:
        if self.args.verbose:
            print(message, file=sys.stderr)

    def url(self, endpoint: str) -> str:
        cluster = urllib.parse.quote(str(self.args.cluster), safe="")
        return self.args.portal.rstrip("/") + f"/api/v1/clusters/{cluster}/{endpoint}"

    def post(self, endpoint: str, body: dict) -> dict | None:
        """The portal's answer, or None on a dry run (which prints the request instead)."""
        url = self.url(endpoint)
        if self.args.dry_run:
            print("\n".join(describe_request(url, body, self.token)))
            return None
        self.log(f"POST {url} (token {mask_token(self.token)})")
        return post_json(
            url,
            body,
            token=self.token,
            opener=self.opener,
            timeout=self.args.timeout,
            base_delay=self.base_delay,
            log=self.log,
        )


# -- This host: Slurm and the exporters ----------------------------------------------------------


def run_slurm(argv, *, log=None) -> str:
    """stdout of a Slurm command, run with TZ=UTC so that it prints times in UTC."""
    search = os.pathsep.join([os.environ.get("PATH", os.defpath), *SLURM_BIN_DIRS])
    executable = shutil.which(argv[0], path=search)
    if executable is None:
        places = ", ".join(SLURM_BIN_DIRS)
        raise Unavailable(f"{argv[0]} not found (PATH, {places}): run this on the cluster's head node")
    if log:
        log("running TZ=UTC " + " ".join(argv))
    options = {"capture_output": True, "encoding": "utf-8", "errors": "replace", "timeout": SLURM_TIMEOUT}
    try:
        # Our own command line, no shell: nothing from outside reaches it.
        result = subprocess.run([executable, *argv[1:]], env=dict(os.environ, TZ="UTC"), **options)  # noqa: S603
    except subprocess.TimeoutExpired:
        raise Unavailable(f"{argv[0]} did not finish in {SLURM_TIMEOUT} s") from None
    except OSError as error:
        raise Unavailable(f"{argv[0]} could not be run: {error}") from None
    if result.returncode != 0:
        said = [line.strip() for line in result.stderr.splitlines() if line.strip()]
        raise Unavailable(f"{argv[0]} exited with status {result.returncode}" + (": " + said[0] if said else ""))
    return result.stdout


def scrape(url: str, *, timeout: float = SCRAPE_TIMEOUT) -> str:
    # No proxy (exporters sit on the cluster's private network) and no token (it is for the portal only).
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=timeout) as response:
        return response.read(MAX_SCRAPE_BYTES).decode("utf-8", "replace")


def _scrape_or_error(node: str, url: str) -> tuple[str, str, str | None, str | None]:
    """(node, url, metrics, None), or (node, url, None, what went wrong)."""
    try:
        return node, url, scrape(url), None
    except (urllib.error.URLError, OSError, http.client.HTTPException, ValueError) as error:
        return node, url, None, str(getattr(error, "reason", error)) or type(error).__name__


# -- Sub-commands --------------------------------------------------------------------------------


def report_jobs(reporter: Reporter, *, since_days: int) -> int:
    sacct = run_slurm(sacct_command(since_days), log=reporter.log)
    sinfo = run_slurm(SINFO_COMMAND, log=reporter.log)
    try:
        partitions = run_slurm(PARTITIONS_COMMAND, log=reporter.log)
    except Unavailable as error:
        # Jobs are still worth posting: the portal keeps the partitions the last report gave.
        print("fmp-reporter: partitions not sent: {}".format(error), file=sys.stderr)
        partitions = None
    body = jobs_body(sacct=sacct, sinfo=sinfo, interval_seconds=reporter.args.interval, partitions=partitions)
    answer = reporter.post("jobs/ingest/", body)
    if answer is not None:
        counts = [answer.get(key, "?") for key in ("received", "created", "updated", "unchanged")]
        print("jobs: {} received, {} new, {} updated, {} unchanged".format(*counts))
    return 0


def report_dcgm(reporter: Reporter, *, port: int) -> int:
    targets = node_addresses(run_slurm(SINFO_COMMAND, log=reporter.log))
    if not targets:
        raise Unavailable("sinfo listed no nodes")
    with ThreadPoolExecutor(max_workers=min(SCRAPE_WORKERS, len(targets))) as pool:
        scrapes = list(pool.map(lambda target: _scrape_or_error(target[0], exporter_url(target[1], port)), targets))
    posted, refused = 0, False
    for node, url, metrics, problem in scrapes:
        if problem is not None:
            # A node being replaced, or without an exporter, must not stop the others' reports.
            print(f"fmp-reporter: dcgm: {node}: no answer from {url}: {problem}", file=sys.stderr)
            continue
        try:
            answer = reporter.post("health/ingest/", health_body(metrics=metrics, host=node))
        except Refused as error:
            if error.status not in (400, 413):
                raise  # a wrong token or cluster: every other node would get the same answer
            print(f"fmp-reporter: dcgm: {node}: {error}", file=sys.stderr)
            refused = True
            continue
        posted += 1
        if answer is not None:
            print(f"dcgm: {node}: {len(metrics)} characters of metrics posted")
    if refused:
        return Refused.exit_code
    if not posted:
        raise Unavailable(f"no exporter answered on port {port}, of {len(targets)} nodes in sinfo")
    if posted < len(targets) and not reporter.args.dry_run:
        print(f"dcgm: {posted} of {len(targets)} nodes posted")
    return 0


def report_nccl(reporter: Reporter, *, logfile: str, nodes: int | None, collective: str | None = None) -> int:
    try:
        if logfile == "-":
            log = sys.stdin.read()
        else:
            with open(logfile, encoding="utf-8", errors="replace") as handle:
                log = handle.read()
    except OSError as error:
        raise Unavailable(f"cannot read {logfile}: {error.strerror or error}") from None
    answer = reporter.post("nccl-tests/", nccl_body(log=log, nodes=nodes, collective=collective))
    if answer is not None:
        name = "standard input" if logfile == "-" else os.path.basename(logfile)
        print(f"nccl: {name} posted" + (f" ({nodes} nodes)" if nodes else ""))
    return 0


def run_command(reporter: Reporter, args) -> int:
    if getattr(args, "handler", None):  # a command another script added (fmp_progress.py)
        return args.handler(reporter, args)
    if args.command == "jobs":
        return report_jobs(reporter, since_days=args.since_days)
    if args.command == "dcgm":
        return report_dcgm(reporter, port=args.port)
    if args.command == "nccl":
        return report_nccl(reporter, logfile=args.logfile, nodes=args.nodes, collective=args.collective)
    status = report_jobs(reporter, since_days=args.since_days)  # run: what cron or the timer calls
    if args.dcgm_port:
        status = max(status, report_dcgm(reporter, port=args.dcgm_port))
    return status


# -- Command line --------------------------------------------------------------------------------


def read_token(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            token = handle.read().strip()
        mode = os.stat(path).st_mode
    except OSError as error:
        raise Unavailable(f"cannot read the token file {path}: {error.strerror or error}") from None
    if not token:
        raise Unavailable(f"the token file {path} is empty: paste the token from the cluster's page")
    if not token.startswith(TOKEN_PREFIX) or len(token.split()) != 1:
        raise Unavailable(f"the token file {path} does not hold a cluster token ({TOKEN_PREFIX}...)")
    if mode & 0o077:
        print(f"fmp-reporter: warning: others may read {path}: chmod 600 it", file=sys.stderr)
    return token


def _positive_int(text) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be above 0: {text!r}")
    return value


def build_parser(settings: dict[str, str], extend=None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fmp_reporter.py",
        description="Report a Slurm cluster's jobs, nodes and GPU health to the FM Program Portal.",
        epilog=f"Options not given are read from FMP_* environment variables, else from {ENV_FILE} "
        "(FMP_ENV_FILE names another). Exit status: 0 all sent; 1 refused by the portal; "
        "2 the portal unreachable after retries, or a local problem.",
    )

    def option(target, flag, variable, default=None, **kwargs):
        shown = f", default {default}" if default else ""
        kwargs["help"] = "{} ({}{})".format(kwargs["help"], variable, shown)
        target.add_argument(flag, default=settings.get(variable) or default, **kwargs)

    option(parser, "--portal", "FMP_PORTAL_URL", metavar="URL", help="the portal's address")
    option(parser, "--cluster", "FMP_CLUSTER_ID", metavar="ID", help="the cluster's id in the portal")
    option(parser, "--token-file", "FMP_TOKEN_FILE", DEFAULT_TOKEN_FILE, metavar="PATH", help="the cluster's token")
    seconds = {"metavar": "SECONDS", "type": _positive_int}
    option(
        parser, "--interval", "FMP_INTERVAL", DEFAULT_INTERVAL, help="how often cron or the timer runs this", **seconds
    )
    option(parser, "--timeout", "FMP_TIMEOUT", DEFAULT_TIMEOUT, help="for each request to the portal", **seconds)
    option(parser, "--ca-file", "FMP_CA_FILE", metavar="PATH", help="CA bundle, for a portal with a private CA")
    parser.add_argument("--dry-run", action="store_true", help="print what would be sent; send nothing")
    parser.add_argument("--verbose", action="store_true", help="say what is run and sent, on stderr")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True
    jobs = commands.add_parser("jobs", help="post sacct and sinfo output")
    dcgm = commands.add_parser("dcgm", help="scrape each node's dcgm-exporter and post what it says")
    option(dcgm, "--port", "FMP_DCGM_PORT", DEFAULT_DCGM_PORT, type=_positive_int, help="dcgm-exporter's port")
    nccl = commands.add_parser("nccl", help="post an nccl-tests log (all_reduce_perf, alltoall_perf, ...)")
    nccl.add_argument("logfile", metavar="LOGFILE", help="the log; - reads standard input")
    nccl.add_argument("--nodes", metavar="N", type=_positive_int, help="how many nodes the test ran on")
    nccl.add_argument(
        "--collective", metavar="NAME", help="the test run (all_reduce, alltoall, ...) when the log does not say"
    )
    run = commands.add_parser("run", help="what cron or the timer calls: jobs, then dcgm if a port is set")
    option(run, "--dcgm-port", "FMP_DCGM_PORT", metavar="PORT", type=_positive_int, help="also run dcgm, on this port")
    for sub in (jobs, run):
        sub.add_argument(
            "--since-days", metavar="N", type=_positive_int, default=DEFAULT_SINCE_DAYS, help="jobs of the last N days"
        )
    commands.add_parser("version", help="print the version")
    if extend:
        extend(commands, option)
    return parser


def main(argv=None, *, opener=None, sleep=time.sleep, extend=None) -> int:
    for stream in (sys.stdout, sys.stderr):  # a job name must not crash a run under a C locale
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="replace")
    settings = load_env_file(os.environ.get("FMP_ENV_FILE", ENV_FILE))
    settings.update((key, value) for key, value in os.environ.items() if key.startswith("FMP_"))
    parser = build_parser(settings, extend)
    args = parser.parse_args(argv)
    if args.command == "version":
        print("fmp-reporter", VERSION)
        return 0
    if not args.portal or not args.cluster:
        parser.error("--portal and --cluster (or FMP_PORTAL_URL and FMP_CLUSTER_ID) are required")
    portal = urllib.parse.urlsplit(args.portal)
    if portal.scheme not in ("https", "http") or not portal.hostname:
        parser.error(f"--portal must be an https:// address, not {args.portal!r}")
    if portal.scheme == "http" and portal.hostname not in ("localhost", "127.0.0.1", "::1"):
        print(f"fmp-reporter: warning: the token goes to {portal.hostname} over plain http", file=sys.stderr)
    try:
        base_delay = float(settings.get("FMP_RETRY_BASE_SECONDS", RETRY_BASE_SECONDS))
    except ValueError:
        parser.error("FMP_RETRY_BASE_SECONDS must be a number of seconds")
    try:
        if args.ca_file and not os.path.isfile(args.ca_file):
            raise Unavailable(f"the CA file {args.ca_file} does not exist")
        token, opener = read_token(args.token_file), opener or make_opener(args.ca_file)
        return run_command(Reporter(args, token=token, opener=opener, sleep=sleep, base_delay=base_delay), args)
    except ReporterError as error:
        print(f"fmp-reporter: {args.command}: {error}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
