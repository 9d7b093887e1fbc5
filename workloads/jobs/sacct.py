"""Parse the job table a cluster's head node reports: the output of SACCT_COMMAND.

Formats checked against Slurm's own source (SchedMD/slurm: doc/man/man1/sacct.1,
src/sacct/print.c, src/common/print_fields.c, src/common/parse_time.c):

- `-P` prints fields joined by `|` with no `|` at the end and escapes nothing, so a `|` typed into
  a job name splits it. JobName is the only free-text column and sits second, so fields are taken
  from both ends: JobID first, the last eleven last, and whatever lies between is the name.
- The header (the column names) is printed unless `-n` is given; it may appear anywhere (reports
  from several runs pasted together) and is recognised by its names, whatever their case.
- Times are local time without an offset (`%FT%T`), so the caller passes the cluster's tzinfo.
  `Unknown` is printed for time 0 (no start yet, no end while running), `None` for a time never set,
  and an empty field for no value: all three become None.
- State is one word, except `CANCELLED by <uid>`: the uid is kept apart from the state.
- AllocTRES lists `gres/gpu=8` (the total) and `gres/gpu:h100=8` (the same GPUs by type): a typed
  entry is a breakdown, never added to the total. Pending jobs have no AllocTRES. A job whose AllocTRES names
  no GPU or Neuron gres holds none (a CPU-only job on a GPU node), unless its partition gives whole nodes
  (`OverSubscribe=EXCLUSIVE` in `scontrol show partition`): then nobody else can use the node's accelerators
  and the job holds them all. Each job says which: its `accelerators_source`.
- `-X` leaves job steps out; a step id (`123.batch`) means the command was run without it.

Each line is a job allocation: an array task (`123_4`), a pending array (`123_[5-10]`) and a
heterogeneous component (`123+1`) are distinct jobs, keyed by their JobID string as printed.
"""

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo

import hostlist

from workloads.telemetry_errors import ParseError

SACCT_FIELDS = (
    "JobID",
    "JobName",
    "User",
    "Account",
    "Partition",
    "State",
    "Submit",
    "Start",
    "End",
    "ElapsedRaw",
    "NNodes",
    "NodeList",
    "AllocTRES",
)
SACCT_COMMAND = "sacct -a -X -P --format=" + ",".join(SACCT_FIELDS)

# job_state_string() in Slurm: the base states, then the flag states it prints instead of the base.
BASE_STATES = frozenset(
    {
        "PENDING",
        "RUNNING",
        "SUSPENDED",
        "COMPLETED",
        "CANCELLED",
        "FAILED",
        "TIMEOUT",
        "NODE_FAIL",
        "PREEMPTED",
        "BOOT_FAIL",
        "DEADLINE",
        "OUT_OF_MEMORY",
    }
)
FLAG_STATES = frozenset(
    {
        "COMPLETING",
        "STAGE_OUT",
        "CONFIGURING",
        "RESIZING",
        "REQUEUED",
        "REQUEUE_FED",
        "REQUEUE_HOLD",
        "SPECIAL_EXIT",
        "STOPPED",
        "REVOKED",
        "RESV_DEL_HOLD",
        "SIGNALING",
    }
)
JOB_STATES = BASE_STATES | FLAG_STATES
# States in which a job still holds its nodes: with no End yet, it is counted up to "now".
HOLDING_STATES = frozenset(
    {"RUNNING", "SUSPENDED", "COMPLETING", "STAGE_OUT", "CONFIGURING", "RESIZING", "STOPPED", "SIGNALING"}
)

ACCELERATOR_GRES = ("gpu", "neuron")  # gres/gpu on P5, gres/neuron on Trn1

# Where a job's accelerator count came from.
FROM_ALLOC_TRES = "alloc_tres"  # AllocTRES names gres/gpu or gres/neuron
FROM_EXCLUSIVE_NODE = "exclusive_node"  # no gres, but an OverSubscribe=EXCLUSIVE partition gave it whole nodes
FROM_NONE = "none"  # no gres on a shared partition, or not allocated yet: it holds none

MAX_JOB_ID = 64  # characters
# slurmdbd keeps a job's name in a `tinytext` column (src/plugins/accounting_storage/mysql/as_mysql_job.c): sacct
# never prints more than 255 bytes of it, so a longer one is not sacct's output. User, account and partition are at
# most MAX_NAME characters here (Linux user names: 32); the Job model's columns are these sizes.
MAX_JOB_NAME = 255
MAX_NAME = 64
_JOB_ID = re.compile(r"\d+(?:_(?:\d+|\[[^\]|]+\])|\+\d+)?")
_STEP_ID = re.compile(r"\d+(?:_(?:\d+|\[[^\]|]+\])|\+\d+)?\.\S+")
_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}")
_NO_TIME = frozenset({"", "Unknown", "None"})
_HEADER = tuple(name.lower() for name in SACCT_FIELDS)


@dataclass(frozen=True)
class SacctJob:
    job_id: str
    name: str
    user: str
    account: str
    partition: str
    state: str  # the base word: CANCELLED for "CANCELLED by 0"
    cancelled_by_uid: int | None  # the uid in "CANCELLED by <uid>"
    submit: datetime | None
    start: datetime | None
    end: datetime | None
    elapsed_seconds: int
    node_count: int
    node_list: str  # "" while pending (sacct prints "None assigned")
    accelerators: int
    accelerator_kind: str | None  # "gpu" or "neuron" when AllocTRES names them; None when counted per node
    accelerator_type: str | None  # "h100" when the typed entries name exactly one type
    accelerators_source: str  # FROM_ALLOC_TRES, FROM_EXCLUSIVE_NODE or FROM_NONE
    line_number: int


def parse_sacct(
    text: str,
    *,
    tz: tzinfo,
    accelerators_per_node: int | None = None,
    exclusive_partitions: frozenset[str] = frozenset(),
) -> tuple[SacctJob, ...]:
    """Every job in the report, in the order first seen; raises ParseError on any bad line.

    `tz` is the cluster's time zone. An allocated job whose AllocTRES names no GPU or Neuron gres holds
    none, unless it ran in one of `exclusive_partitions` (whole nodes per job): then it holds
    `accelerators_per_node` (16 for trn1.32xlarge) on each node. A job id listed twice (overlapping reports
    pasted together) is kept once, with its last row. A row that cannot be (an End before its Start, a Start before
    its Submit, no node for a job that started, a name longer than slurmdbd keeps) is refused.
    """
    if tz is None:
        raise TypeError("parse_sacct needs the cluster's tzinfo: sacct prints local times without an offset")
    if accelerators_per_node is not None and accelerators_per_node < 1:
        raise ValueError("accelerators_per_node must be at least 1")
    jobs: dict[str, SacctJob] = {}
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        fields = line.split("|")
        if _is_header(fields, number):
            continue
        job = _parse_line(fields, number, tz, accelerators_per_node, exclusive_partitions)
        jobs[job.job_id] = job
    return tuple(jobs.values())


def accelerator_seconds(job: SacctJob, *, now: datetime, since: datetime | None = None) -> float:
    """Accelerator-seconds the job held between `since` (default: its start) and `now`.

    A job counts from Start to End; while it still holds its nodes (no End yet) up to `now`; before
    it starts, nothing. A finished job missing its End counts its ElapsedRaw. Pass `since`/`now` as a
    day's bounds to get that day's share.
    """
    if now.tzinfo is None or (since is not None and since.tzinfo is None):
        raise ValueError("now and since must be aware datetimes")
    if job.start is None or job.accelerators == 0:
        return 0.0
    # In UTC: aware datetimes sharing a tzinfo compare and subtract as wall-clock times, wrong across DST.
    start, now = job.start.astimezone(UTC), now.astimezone(UTC)
    if job.end is not None:
        end = job.end.astimezone(UTC)
    elif job.state in HOLDING_STATES:
        end = now
    else:
        end = start + timedelta(seconds=job.elapsed_seconds)
    begin = start if since is None else max(start, since.astimezone(UTC))
    seconds = (min(end, now) - begin).total_seconds()
    return max(seconds, 0.0) * job.accelerators


def accelerator_hours(job: SacctJob, *, now: datetime, since: datetime | None = None) -> float:
    return accelerator_seconds(job, now=now, since=since) / 3600


def _is_header(fields: list[str], number: int) -> bool:
    if fields[0].strip().lower() != "jobid":
        return False
    if tuple(field.strip().lower() for field in fields) != _HEADER:
        raise ParseError(
            number,
            f"the header lists {'|'.join(fields)}; expected {'|'.join(SACCT_FIELDS)} (run {SACCT_COMMAND})",
        )
    return True


def _parse_line(
    fields: list[str], number: int, tz: tzinfo, accelerators_per_node: int | None, exclusive: frozenset[str]
) -> SacctJob:
    if len(fields) < len(SACCT_FIELDS):
        raise ParseError(number, f"expected {len(SACCT_FIELDS)} fields separated by |, found {len(fields)}")
    # Only JobName is free text: a surplus of fields is a | typed into the name.
    job_id, name = fields[0], "|".join(fields[1:-11])
    user, account, partition, state, submit, start, end, elapsed, nnodes, node_list, alloc_tres = fields[-11:]
    if _STEP_ID.fullmatch(job_id):
        raise ParseError(number, f"{job_id} is a job step: run sacct with -X to list allocations only")
    if not _JOB_ID.fullmatch(job_id) or len(job_id) > MAX_JOB_ID:
        raise ParseError(number, f"JobID must look like 123, 123_4, 123_[5-10] or 123+1; found {job_id[:80]!r}")
    if len(name) > MAX_JOB_NAME:
        raise ParseError(number, f"JobName is {len(name):,} characters: sacct prints at most {MAX_JOB_NAME}")
    for column, value in (("User", user), ("Account", account), ("Partition", partition)):
        if len(value) > MAX_NAME:
            raise ParseError(number, f"{column} {value[:40]!r}… is {len(value):,} characters: at most {MAX_NAME}")
    state, cancelled_by = _state(state, number)
    node_count = _whole_number("NNodes", nnodes, number)
    kind, model, accelerators = _accelerators(alloc_tres, number)
    source = FROM_ALLOC_TRES if kind is not None else FROM_NONE
    if kind is None and alloc_tres.strip() and partition in exclusive and accelerators_per_node:
        accelerators, source = node_count * accelerators_per_node, FROM_EXCLUSIVE_NODE
    submit_at = _time("Submit", submit, number, tz)
    start_at, end_at = _time("Start", start, number, tz), _time("End", end, number, tz)
    if start_at is not None and end_at is not None and end_at < start_at:
        raise ParseError(number, f"job {job_id}: End {end} is before its Start {start}")
    if submit_at is not None and start_at is not None and start_at < submit_at:
        raise ParseError(number, f"job {job_id}: Start {start} is before its Submit {submit}")
    if node_count == 0 and (start_at is not None or node_list not in ("None assigned", "")):
        # A job that started holds at least one node (a pending one prints the nodes it asks for).
        raise ParseError(number, f"job {job_id}: NNodes is 0, but the job started or names its nodes")
    return SacctJob(
        job_id=job_id,
        name=name,
        user=user,
        account=account,
        partition=partition,
        state=state,
        cancelled_by_uid=cancelled_by,
        submit=submit_at,
        start=start_at,
        end=end_at,
        elapsed_seconds=_whole_number("ElapsedRaw", elapsed, number, MAX_ELAPSED),
        node_count=node_count,
        node_list=_node_list(node_list, number),
        accelerators=accelerators,
        accelerator_kind=kind,
        accelerator_type=model,
        accelerators_source=source,
        line_number=number,
    )


def _node_list(value: str, number: int) -> str:
    if value in ("None assigned", ""):
        return ""
    try:
        nodelist_size(value)
    except ValueError as error:
        raise ParseError(number, f"NodeList {value[:80]!r} is not a Slurm host list: {error}") from None
    return value


MAX_NODES = 10_000  # nodes one job may name: the whole program has 151 instances


def nodelist_size(text: str) -> int:
    """How many names a Slurm host list stands for, counted without writing them out (a few characters such as
    `a[0-99999]b[0-99999]` stand for ten billion). Raises ValueError if malformed or over MAX_NODES."""
    total = sum(_part_size(part) for part in _top_level_parts(text))
    if total > MAX_NODES:
        raise ValueError(f"more than {MAX_NODES:,} nodes")
    return total


def expand_nodelist(text: str) -> list[str]:
    """The node names of a Slurm host list, in order: `ip-10-1-0-[1-3,7]` → ip-10-1-0-1, -2, -3, -7, by
    python-hostlist (NSC's library, the one `hostlist` command-line tool of many Slurm sites): ranges keep the zero
    padding of their first number (`node[08-10]`), several bracket groups multiply (`rack[1-2]-n[1-2]`). Its own
    bound is per part (MAX_SIZE names), not per list, so ours counts the whole list first: raises ValueError if
    malformed or over MAX_NODES before a single name is built."""
    nodelist_size(text)
    try:
        return hostlist.expand_hostlist(text.strip(), allow_duplicates=True)
    except hostlist.BadHostlist as error:
        raise ValueError(str(error)) from None


def job_hosts(node_list: str, hosts: list[str]) -> list[str]:
    """What a job ran on: its hosts as resolved through the reporter's node map when it was reported, else the
    names of its host list."""
    return hosts or expand_nodelist(node_list)


def _top_level_parts(text: str) -> list[str]:
    parts, depth, current = [], 0, []
    # Between brackets and commas, runs of characters are taken whole (a report names some 50,000 hosts).
    for token in _DELIMITERS.split(text):
        if token == "[":
            depth += 1
            if depth > 1:
                raise ValueError("nested brackets")
        elif token == "]":
            depth -= 1
            if depth < 0:
                raise ValueError("a ] without its [")
        if token == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(token)
    if depth:
        raise ValueError("a [ without its ]")
    parts.append("".join(current))
    if any(not part.strip() for part in parts):
        raise ValueError("an empty host name")
    return parts


_DELIMITERS = re.compile(r"([\[\],])")


def _ranges(inside: str) -> list[tuple[int, int, int]]:
    """The (low, high, width) of each item of a bracket group: `1-3,07` → (1, 3, 1), (7, 7, 2)."""
    ranges = []
    for item in inside.split(","):
        low, dash, high = item.partition("-")
        if not low.isdigit() or (dash and not high.isdigit()) or len(low) > 9 or len(high) > 9:
            raise ValueError(f"[{inside[:40]}] is not a list of numbers and ranges")
        first, last = int(low), int(high) if dash else int(low)
        if last < first:
            raise ValueError(f"the range {item} is empty")
        ranges.append((first, last, len(low)))
    return ranges


def _part_size(part: str) -> int:
    size = 1
    while "[" in part:
        _head, _, rest = part.partition("[")
        inside, _, part = rest.partition("]")
        size *= sum(last - first + 1 for first, last, _width in _ranges(inside))
        if size > MAX_NODES:
            raise ValueError(f"more than {MAX_NODES:,} nodes")
    return size


def _state(value: str, number: int) -> tuple[str, int | None]:
    words = value.split()
    if not words or words[0] not in JOB_STATES:
        raise ParseError(number, f"unknown job state {value!r}")
    if len(words) == 1:
        return words[0], None
    if words[0] == "CANCELLED" and len(words) == 3 and words[1] == "by" and words[2].isdigit():
        return "CANCELLED", _whole_number("the uid of CANCELLED by", words[2], number, MAX_UID)
    raise ParseError(number, f"unknown job state {value!r}: only CANCELLED is followed by 'by <uid>'")


def _time(column: str, value: str, number: int, tz: tzinfo) -> datetime | None:
    if value in _NO_TIME:
        return None
    if _TIME.fullmatch(value):
        try:
            # The pattern has fixed the shape; fromisoformat reads it some 20× faster than strptime (three times
            # a line of a 10,000-line report) and refuses what is no date (a 13th month) just the same.
            moment = datetime.fromisoformat(value).replace(tzinfo=tz)
        except ValueError:
            pass
        else:
            if not EARLIEST <= moment.year < LATEST:
                raise ParseError(number, f"{column} {value} is not a time a job of this program can have")
            return moment
    raise ParseError(number, f"{column} must be a time like 2026-11-20T09:15:02, Unknown or None; found {value!r}")


MAX_COUNT = 2**31 - 1  # nodes, accelerators: the columns they are kept in
MAX_ELAPSED = 2**40  # seconds: some 35,000 years
MAX_UID = 2**32 - 1
EARLIEST, LATEST = 2000, 2100  # years a job of this program can have


def _whole_number(column: str, value: str, number: int, maximum: int = MAX_COUNT) -> int:
    if not value.isascii() or not value.isdigit():
        raise ParseError(number, f"{column} must be a whole number, found {value!r}")
    if len(value) > 20 or int(value) > maximum:
        raise ParseError(number, f"{column} {value} is out of range (at most {maximum:,})")
    return int(value)


def _accelerators(alloc_tres: str, number: int) -> tuple[str | None, str | None, int]:
    """(kind, type, count) from AllocTRES; (None, None, 0) when it names no GPU or Neuron gres."""
    untyped: dict[str, int] = {}
    typed: dict[str, dict[str, int]] = {}
    seen: set[str] = set()
    for entry in filter(None, alloc_tres.split(",")):
        key, equals, value = entry.partition("=")
        if not equals or not key:
            raise ParseError(number, f"AllocTRES entries look like name=count; found {entry!r}")
        if key in seen:
            raise ParseError(number, f"AllocTRES lists {key} twice")
        seen.add(key)
        gres, _, gres_type = key.removeprefix("gres/").partition(":")
        if not key.startswith("gres/") or gres not in ACCELERATOR_GRES:
            continue  # cpu, mem, node, billing, gres/gpumem...: not accelerators
        count = _whole_number(key, value, number)
        if gres_type:
            typed.setdefault(gres, {})[gres_type] = count
        else:
            untyped[gres] = count
    totals = {
        gres: untyped[gres] if gres in untyped else sum(typed.get(gres, {}).values())
        for gres in ACCELERATOR_GRES
        if gres in untyped or gres in typed
    }
    if not totals:
        return None, None, 0
    if len(totals) > 1:
        raise ParseError(number, "AllocTRES names both GPUs and Neuron devices; one job has one kind")
    kind, count = next(iter(totals.items()))
    types = typed.get(kind, {})
    return kind, (next(iter(types)) if len(types) == 1 else None), count


SINFO_COMMAND = "sinfo -h -N -o %N|%n|%o"  # NodeName|NodeHostName|NodeAddr, one line per node and partition


def parse_sinfo_nodes(text: str) -> dict[str, str]:
    """Slurm node name → the host it runs on, from SINFO_COMMAND's output: its address (NodeAddr) if Slurm has
    one, else its host name. A node Slurm has not placed yet (a powered-down cloud node prints its own name in
    both) maps to nothing. Raises ParseError on a line that is not three fields."""
    nodes: dict[str, str] = {}
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.strip()
        if not line:
            continue
        fields = [field.strip() for field in line.split("|")]
        if len(fields) != 3 or not fields[0]:
            raise ParseError(number, f"expected NodeName|NodeHostName|NodeAddr (run {SINFO_COMMAND}); found {line!r}")
        name, hostname, address = fields
        host = next((h for h in (address, hostname) if h and h != name), "")
        if host:
            nodes[name] = host
    return nodes


PARTITIONS_COMMAND = "scontrol show partition -o"  # one line per partition: PartitionName=p5 … OverSubscribe=…


def parse_exclusive_partitions(text: str) -> frozenset[str]:
    """The partitions that give each job whole nodes, from `scontrol show partition` (with -o or without: a record
    starts at PartitionName=). Slurm's slurm.conf(5): OverSubscribe=EXCLUSIVE "allocates entire nodes to jobs even
    with SelectType=select/cons_tres"; Slurm before 15.08 printed it as Shared=EXCLUSIVE. Raises ParseError on a
    line that is not key=value words."""
    exclusive: set[str] = set()
    name: str | None = None
    for number, line in enumerate(text.split("\n"), start=1):
        for word in line.split():
            key, equals, value = word.partition("=")
            if not equals:
                raise ParseError(number, f"expected key=value words (run {PARTITIONS_COMMAND}); found {word[:80]!r}")
            if key == "PartitionName":
                name = value
            elif key in ("OverSubscribe", "Shared") and value.upper() == "EXCLUSIVE":
                if name is None:
                    raise ParseError(number, f"{key}=EXCLUSIVE before any PartitionName=")
                exclusive.add(name)
    return frozenset(exclusive)
