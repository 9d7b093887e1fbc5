"""Parse nccl-tests logs (all_reduce_perf and its siblings) and judge a run against a baseline.

Formats checked against NVIDIA/nccl-tests (src/common.cu and the tests' print_header() over their
history) and two real p5 logs from aws-samples/awsome-distributed-training (tests/samples):

- A line may carry the launcher's prefix: srun --label's `0: `, mpirun --tag-output's
  `[1,0]<stdout>:`. It is stripped, and the rest read as nccl-tests wrote it.
- The column header (`#  size  count  type  redop  root  time algbw busbw #wrong  time ...`)
  decides how rows are read: current versions print redop and root; older ones redop and root,
  redop only, or neither (gather-type tests), with an `error` column (the largest numeric error)
  where today's print `#wrong` (a count of wrong values, `N/A` when checking is off). A second header
  is a second run pasted in: refused, one run per log.
- Between the header and the summary (`# Out of bounds values : 0 OK`, `# Avg bus bandwidth : x`)
  a line starting with a whole number is a result row and must be a whole one. Everything else
  (NCCL INFO/WARN lines, blank lines, other ranks' chatter) is noise. A `...` line is an elision
  left in a copied log: noted in `elided`, since the reported average then covers rows not shown.
- `-I 1` (per-iteration timing, nccl-tests 2.19) adds i_min i_max i_p99 i_cv% after each of the out-of-place and
  in-place groups; `-S 1` (report timestamps, 2.17.6) ends each row with a local "YYYY-MM-DD HH:MM:SS" (two
  tokens). Both are read from the header's column names; `-C 1` prints cputime for time.
- MPICH / Intel MPI's `-prepend-rank` / `-l` prefix `[0] ` is stripped like srun's and Open MPI's.
- The collective: nccl-tests 2.16.x and later print "# Collective test starting: alltoall_perf"; older logs
  often carry the command line naming the binary. Neither: None (the caller decides).
- A last line without a line feed is read when it is complete (a row with every column, the whole
  summary line); a row short of its columns there is refused as cut ("487.26" arriving as "487.2" cannot be
  told apart from a complete row, so a row's last cell must be the #wrong/error/timestamp field).
The peak bus bandwidth is the largest of the out-of-place and in-place columns; the average is
nccl-tests' own, over every size run, None when the summary never came.
"""

import math
import re
from dataclasses import dataclass

from django.utils.translation import gettext as _

from workloads.telemetry_errors import ParseError

_PREFIX = re.compile(r"^(?:\s*\d+:|\[\d+,\d+\]<std(?:out|err)>:|\[\d+\] )")
COLLECTIVES = (
    "all_reduce",
    "all_gather",
    "alltoall",
    "alltoallv",
    "broadcast",
    "gather",
    "hypercube",
    "reduce",
    "reduce_scatter",
    "scatter",
    "sendrecv",
)
_STARTING = re.compile(r"#\s*Collective test starting:\s*(\S+)")
_BINARY = re.compile(r"(?<![\w])(" + "|".join(sorted(COLLECTIVES, key=len, reverse=True)) + r")_perf(?:_mpi)?\b")
_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}")
_ROW_START = re.compile(r"[+-]?\d+\s")
_PER_ITERATION = ("i_min", "i_max", "i_p99", "i_cv%")
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_RANK = re.compile(r"#\s*Rank\s+(\d+)\s+Group\s+\d+\s+Pid\s+\d+\s+on\s+(\S+)\s+device\b")
_OUT_OF_BOUNDS = re.compile(r"#\s*Out of bounds values\s*:\s*(\S+)\s*(\S*)")
_AVERAGE = re.compile(r"#\s*Avg bus bandwidth\s*:\s*(\S*)")
_LEADING = ("size", "count", "type")
_OPTIONAL = ("redop", "root")


@dataclass(frozen=True)
class Measurement:
    time_us: float
    algbw_gbps: float
    busbw_gbps: float
    wrong: int | None  # the #wrong column; None when checking was off (N/A) or in old logs
    max_error: float | None  # the error column of older nccl-tests; None otherwise


@dataclass(frozen=True)
class NcclRow:
    size_bytes: int
    count: int
    type: str
    redop: str | None  # None when the log has no redop column
    root: int | None  # None when the log has no root column
    out_of_place: Measurement
    in_place: Measurement
    line_number: int


@dataclass(frozen=True)
class NcclRun:
    rows: tuple[NcclRow, ...]
    peak_busbw_gbps: float
    peak_size_bytes: int
    avg_busbw_gbps: float | None  # nccl-tests' "Avg bus bandwidth"; None without the summary
    out_of_bounds: int | None  # "Out of bounds values"; None without the summary
    hosts: tuple[str, ...]  # from the "#  Rank ... on <host>" lines; () when not printed
    ranks: int | None  # how many "#  Rank" lines; None when not printed
    elided: bool  # a "..." line stands for rows left out of the log
    collective: str | None = None  # "all_reduce", "alltoall", ...; None when the log does not say
    average_line: int = 0  # the line of "Avg bus bandwidth"; 0 without it


@dataclass(frozen=True)
class Baseline:
    instance_type: str
    nodes: int
    size_bytes: int
    busbw_gbps: float
    source: str
    collective: str = "all_reduce"


P5_MULTINODE_BASELINE = Baseline(
    instance_type="p5.48xlarge",
    nodes=2,
    size_bytes=16 * 2**30,
    busbw_gbps=487.0,
    source="aws-samples/awsome-distributed-training micro-benchmarks/nccl-tests/README.md @ 27b7d49: "
    "all_reduce_perf over Slurm on 2x p5.48xlarge, bus bandwidth peaking at 487.26 GB/s at 16 GiB",
)
DEFAULT_MIN_FRACTION = 0.9


@dataclass(frozen=True)
class Judgement:
    verdict: str  # "passed" or "suspect"
    peak_busbw_gbps: float
    peak_size_bytes: int
    baseline_busbw_gbps: float
    fraction: float  # peak / baseline
    min_fraction: float
    wrong_values: int  # out-of-bounds values plus every #wrong count
    reasons: tuple[str, ...]  # why suspect; () when passed

    @property
    def passed(self) -> bool:
        return self.verdict == "passed"


def parse_nccl_log(text: str) -> NcclRun:
    """The one run in an nccl-tests log; raises ParseError naming the line at fault."""
    lines = text.split("\n")
    columns: tuple[str, ...] | None = None
    header_line = 0
    rows: list[NcclRow] = []
    average: float | None = None
    out_of_bounds: int | None = None
    summary_line = average_line = 0
    ranks: dict[int, str] = {}
    elided = False
    started: str | None = None
    named: set[str] = set()
    for number, raw in enumerate(lines, start=1):
        content = _PREFIX.sub("", raw.removesuffix("\r"), count=1).strip()
        last = number == len(lines)  # no line feed after it: complete only if nothing of it can be missing
        if not content:
            continue
        if set(content) == {"."} and len(content) >= 3:
            elided = True
        elif content.startswith("#"):
            words = content[1:].split()
            if words[:1] == ["size"]:
                if columns is not None:
                    raise ParseError(
                        number, f"a second result table starts here (the first on line {header_line}): one run per log"
                    )
                columns, header_line = _columns(words, number), number
            elif rank := _RANK.match(content):
                ranks[int(rank.group(1))] = rank.group(2)
            elif match := _STARTING.match(content):
                started = started or match.group(1)
            elif match := _OUT_OF_BOUNDS.match(content):
                _refuse_if_cut(last and match.group(2) not in ("OK", "FAILED"), number)
                out_of_bounds, summary_line = _whole("out-of-bounds count", match.group(1), number), number
            elif match := _AVERAGE.match(content):
                # Current nccl-tests end the line with "OK", "FAILED" or a space; older ones with the number.
                _refuse_if_cut(last and not (raw.endswith((" ", "OK", "FAILED"))), number)
                average, summary_line = _number("average bus bandwidth", match.group(1), number), number
                average_line = number
        elif columns is not None and _ROW_START.match(content):  # "-8 ..." is a row, with a bad size
            if summary_line:
                raise ParseError(number, f"a result row after the summary on line {summary_line}")
            tokens = content.split()
            _refuse_if_cut(last and len(tokens) < len(columns), number)
            rows.append(_row(tokens, columns, header_line, number))
        else:
            named.update(match.group(1) for match in _BINARY.finditer(content))
    if columns is None:
        raise ParseError(
            max(len(lines) - (not lines[-1]), 1),
            "no result table: the log never prints the '#  size  count  type ...' header of nccl-tests",
        )
    if not rows:
        raise ParseError(
            max(len(lines) - (not lines[-1]), 1), f"the result table (header on line {header_line}) has no rows"
        )
    peak_row, peak = rows[0], -1.0
    for row in rows:
        for measurement in (row.out_of_place, row.in_place):
            if measurement.busbw_gbps > peak:
                peak_row, peak = row, measurement.busbw_gbps
    return NcclRun(
        rows=tuple(rows),
        peak_busbw_gbps=peak,
        peak_size_bytes=peak_row.size_bytes,
        avg_busbw_gbps=average,
        out_of_bounds=out_of_bounds,
        hosts=tuple(sorted(set(ranks.values()))),
        ranks=len(ranks) or None,
        elided=elided,
        collective=_collective(started, named),
        average_line=average_line,
    )


def _collective(started: str | None, named: set[str]) -> str | None:
    """The test's own banner first; else the one binary the log's other lines name (a command line echoed)."""
    if started is not None:
        binary = started.rsplit("/", 1)[-1]
        match = _BINARY.fullmatch(binary)
        # A renamed binary is kept as named (cut to the field's size): no baseline will match it.
        return match.group(1) if match else binary[:40]
    return named.pop() if len(named) == 1 else None


def format_size(size_bytes: int) -> str:
    """A message size the way nccl-tests users say it: in binary units (16 GiB, 512 MiB), never raw bytes."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(size_bytes) >= scale:
            return f"{size_bytes / scale:.3g} {unit}"
    return f"{size_bytes} B"


def judge(
    run: NcclRun,
    baseline_busbw_gbps: float = P5_MULTINODE_BASELINE.busbw_gbps,
    min_fraction: float = DEFAULT_MIN_FRACTION,
) -> Judgement:
    """Passed when the peak bus bandwidth reaches min_fraction of the baseline and no value was wrong.

    The baseline is a large-message peak, so a run that stopped at small sizes is judged suspect:
    it never showed the interconnect at full speed.
    """
    if baseline_busbw_gbps <= 0 or not 0 < min_fraction <= 1:
        raise ValueError("baseline_busbw_gbps must be positive and min_fraction within (0, 1]")
    fraction = run.peak_busbw_gbps / baseline_busbw_gbps
    wrong = (run.out_of_bounds or 0) + sum(m.wrong or 0 for row in run.rows for m in (row.out_of_place, row.in_place))
    reasons = []
    if fraction < min_fraction:
        reasons.append(
            _(
                "peak bus bandwidth %(peak)s GB/s (at %(size)s) is %(fraction)s of the %(baseline)s GB/s baseline, "
                "below %(min)s"
            )
            % {
                "peak": f"{run.peak_busbw_gbps:g}",
                "size": format_size(run.peak_size_bytes),
                "fraction": f"{fraction:.1%}",
                "baseline": f"{baseline_busbw_gbps:g}",
                "min": f"{min_fraction:.0%}",
            }
        )
    if wrong:
        reasons.append(_("%(n)d wrong values reported: the collective returned bad data") % {"n": wrong})
    return Judgement(
        verdict="suspect" if reasons else "passed",
        peak_busbw_gbps=run.peak_busbw_gbps,
        peak_size_bytes=run.peak_size_bytes,
        baseline_busbw_gbps=baseline_busbw_gbps,
        fraction=fraction,
        min_fraction=min_fraction,
        wrong_values=wrong,
        reasons=tuple(reasons),
    )


# The fastest link an accelerator of the type has, GB/s: NVLink 4 on H100/H200 (900), NVLink 3 on A100 (600);
# Trainium's NeuronLink-v2, 384 GiB/s per device on trn1.32xlarge and 768 on trn1n.32xlarge (their EFA: 800 and
# 1,600 Gbps), from the Neuron guide's Trn1/Trn1n architecture table, TRN1_ARCHITECTURE_URL.
# No collective's bus bandwidth exceeds it (intra-node) or the EFA line rate (multi-node, far lower), so the
# ceiling is the larger of the two, × 1.25 for measurement noise. A type not listed gets NVLink 5's 1,800 GB/s.
TRN1_ARCHITECTURE_URL = (
    "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/general/arch/neuron-hardware/trn1-arch.html"
)
GIB_PER_S = 2**30 / 1e9  # one GiB/s in GB/s
INTERCONNECT_GBPS = {
    "p5": 900, "p5e": 900, "p5en": 900, "p4d": 600, "p4de": 600,
    "trn1": 384 * GIB_PER_S, "trn1n": 768 * GIB_PER_S,
}  # fmt: skip
FASTEST_LINK_GBPS = 1800
CEILING_MARGIN = 1.25
MAX_SIZE_BYTES = 2**40  # 1 TiB per message: beyond any accelerator's memory


def busbw_ceiling(instance_type: str, efa_gbps: int = 0) -> float:
    """The highest bus bandwidth a run on this type can honestly report, GB/s."""
    link = INTERCONNECT_GBPS.get(instance_type.split(".", 1)[0], FASTEST_LINK_GBPS)
    return CEILING_MARGIN * max(link, efa_gbps / 8)


def check_plausible(run: NcclRun, *, ceiling_gbps: float) -> None:
    """Raises ParseError naming the first row no real run prints: a size beyond memory, more elements than
    bytes, a time not above zero, a negative bandwidth or one above the link's ceiling."""
    for row in run.rows:
        if row.size_bytes > MAX_SIZE_BYTES:
            raise ParseError(row.line_number, f"the size {row.size_bytes} B is beyond any accelerator's memory")
        if row.count > row.size_bytes:
            raise ParseError(row.line_number, f"the count {row.count} is more elements than the {row.size_bytes} bytes")
        for where, m in (("out-of-place", row.out_of_place), ("in-place", row.in_place)):
            if m.time_us <= 0:
                raise ParseError(row.line_number, f"the {where} time {m.time_us:g} us is not above zero")
            # algbw may exceed busbw (all_gather on 2 ranks: twice), so only its sign is bounded.
            if m.algbw_gbps < 0:
                raise ParseError(row.line_number, f"the {where} algbw {m.algbw_gbps:g} GB/s is below zero")
            if not 0 <= m.busbw_gbps <= ceiling_gbps:
                raise ParseError(
                    row.line_number,
                    f"the {where} busbw {m.busbw_gbps:g} GB/s is outside 0 to {ceiling_gbps:g} GB/s, the most "
                    "this instance type's links carry",
                )
    if run.avg_busbw_gbps is not None and not 0 <= run.avg_busbw_gbps <= ceiling_gbps:
        raise ParseError(
            run.average_line,
            f"the average bus bandwidth {run.avg_busbw_gbps:g} GB/s is outside 0 to {ceiling_gbps:g} GB/s",
        )


def _refuse_if_cut(cut: bool, number: int) -> None:
    if cut:
        raise ParseError(
            number, "the log ends in the middle of this line (no line feed after it): it may have been cut"
        )


def _columns(words: list[str], number: int) -> tuple[str, ...]:
    """The header's column names: size count type [redop] [root], then twice time algbw busbw #wrong|error
    [i_min i_max i_p99 i_cv%], then [timestamp]."""
    lead, position = list(_LEADING), len(_LEADING)
    for optional in _OPTIONAL:
        if words[position : position + 1] == [optional]:
            lead.append(optional)
            position += 1
    group = ["time" if word == "cputime" else word for word in words[position:]]
    stamped = group[-1:] == ["timestamp"]
    if stamped:
        group.pop()
    check = group[3] if len(group) > 3 else ""
    per_iteration = list(_PER_ITERATION) if group[4:8] == list(_PER_ITERATION) else []
    if (
        words[: len(_LEADING)] != list(_LEADING)
        or check not in ("#wrong", "error")
        or group != ["time", "algbw", "busbw", check, *per_iteration] * 2
    ):
        raise ParseError(
            number,
            f"unsupported column set {' '.join(words)!r}: expected size count type [redop] [root], then "
            "time algbw busbw #wrong (or error) [i_min i_max i_p99 i_cv%] out-of-place and in-place [timestamp]",
        )
    # The timestamp is a date and a time: two tokens of a row.
    return (*lead, *group, *(("date", "clock") if stamped else ()))


def _row(tokens: list[str], columns: tuple[str, ...], header_line: int, number: int) -> NcclRow:
    if "redop" in columns and len(tokens) == len(columns) - 1 and _NUMBER.fullmatch(tokens[3]):
        # Older nccl-tests print alltoall's and all_gather's empty op name as blanks: the redop cell is missing.
        tokens = [*tokens[:3], "none", *tokens[3:]]
    if len(tokens) != len(columns):
        raise ParseError(
            number, f"expected {len(columns)} columns as in the header on line {header_line}, found {len(tokens)}"
        )
    stamped = columns[-1] == "clock"
    if stamped and not _TIMESTAMP.fullmatch(" ".join(tokens[-2:])):
        raise ParseError(number, f"the timestamp {' '.join(tokens[-2:])!r} is not YYYY-MM-DD HH:MM:SS")
    body = columns[: len(columns) - 2] if stamped else columns
    width = 8 if body[-1] == "i_cv%" else 4  # one group: time algbw busbw check [4 per-iteration figures]
    cells = tokens[len(body) - 2 * width : len(body)]
    lead = dict(zip(body[: len(body) - 2 * width], tokens[: len(body) - 2 * width], strict=True))
    check = body[len(body) - 2 * width + 3]
    per_iteration = cells[4:width] + cells[width + 4 :]
    for index, value in enumerate(per_iteration):
        _number(f"{_PER_ITERATION[index % 4]} figure", value, number)
    return NcclRow(
        size_bytes=_whole("size", lead["size"], number),
        count=_whole("count", lead["count"], number),
        type=lead["type"],
        redop=lead.get("redop"),
        root=_whole("root", lead["root"], number, signed=True) if "root" in lead else None,
        out_of_place=_measurement(cells[:4], check, "out-of-place", number),
        in_place=_measurement(cells[width : width + 4], check, "in-place", number),
        line_number=number,
    )


def _measurement(cells: list[str], check: str, where: str, number: int) -> Measurement:
    time, algbw, busbw, checked = cells
    wrong = error = None
    if checked != "N/A":
        if check == "#wrong":  # printed with %6g: a large count reads "1e+06"
            value = _number(f"{where} #wrong", checked, number)
            if value < 0 or value != int(value) or value > MAX_WHOLE:
                raise ParseError(number, f"the {where} #wrong {checked!r} is not a whole number")
            wrong = int(value)
        else:
            error = _number(f"{where} error", checked, number)
    return Measurement(
        time_us=_number(f"{where} time", time, number),
        algbw_gbps=_number(f"{where} algbw", algbw, number),
        busbw_gbps=_number(f"{where} busbw", busbw, number),
        wrong=wrong,
        max_error=error,
    )


MAX_WHOLE = 2**62  # sizes in bytes, element counts, wrong values: far beyond any real run


def _whole(column: str, value: str, number: int, *, signed: bool = False) -> int:
    digits = value[1:] if signed and value.startswith("-") else value
    if not digits.isascii() or not digits.isdigit():
        raise ParseError(number, f"the {column} {value!r} is not a whole number")
    if len(digits) > 19 or int(digits) > MAX_WHOLE:
        raise ParseError(number, f"the {column} {value} is out of range")
    return int(value)


def _number(column: str, value: str, number: int) -> float:
    if not _NUMBER.fullmatch(value) or not math.isfinite(float(value)):
        raise ParseError(number, f"the {column} {value!r} is not a number")
    return float(value)
