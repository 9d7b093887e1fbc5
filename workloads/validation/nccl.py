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
- A log must end with a line feed: a last row or summary line without one may have been cut
  ("487.26" arriving as "487.2"), so it is refused rather than read.
The peak bus bandwidth is the largest of the out-of-place and in-place columns; the average is
nccl-tests' own, over every size run, None when the summary never came.
"""

import math
import re
from dataclasses import dataclass

from django.utils.translation import gettext as _

from workloads.telemetry_errors import ParseError

_PREFIX = re.compile(r"^(?:\s*\d+:|\[\d+,\d+\]<std(?:out|err)>:)")
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


@dataclass(frozen=True)
class Baseline:
    instance_type: str
    nodes: int
    size_bytes: int
    busbw_gbps: float
    source: str


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
    summary_line = 0
    ranks: dict[int, str] = {}
    elided = False
    for number, raw in enumerate(lines, start=1):
        content = _PREFIX.sub("", raw.removesuffix("\r"), count=1).strip()
        cut = number == len(lines)  # no line feed after it: may have been cut
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
            elif match := _OUT_OF_BOUNDS.match(content):
                _refuse_if_cut(cut, number)
                out_of_bounds, summary_line = _whole("out-of-bounds count", match.group(1), number), number
            elif match := _AVERAGE.match(content):
                _refuse_if_cut(cut, number)
                average, summary_line = _number("average bus bandwidth", match.group(1), number), number
        elif columns is not None and content.split()[0].isdigit():
            if summary_line:
                raise ParseError(number, f"a result row after the summary on line {summary_line}")
            _refuse_if_cut(cut, number)
            rows.append(_row(content.split(), columns, header_line, number))
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
    )


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


def _refuse_if_cut(cut: bool, number: int) -> None:
    if cut:
        raise ParseError(
            number, "the log ends in the middle of this line (no line feed after it): it may have been cut"
        )


def _columns(words: list[str], number: int) -> tuple[str, ...]:
    """The header's column names: size count type [redop] [root], then twice time algbw busbw #wrong|error."""
    lead, position = list(_LEADING), len(_LEADING)
    for optional in _OPTIONAL:
        if words[position : position + 1] == [optional]:
            lead.append(optional)
            position += 1
    group = ["time" if word == "cputime" else word for word in words[position:]]
    check = group[3] if len(group) > 3 else ""
    if (
        words[: len(_LEADING)] != list(_LEADING)
        or check not in ("#wrong", "error")
        or group != ["time", "algbw", "busbw", check] * 2
    ):
        raise ParseError(
            number,
            f"unsupported column set {' '.join(words)!r}: expected size count type [redop] [root], then "
            "time algbw busbw #wrong (or error) out-of-place and in-place",
        )
    return (*lead, *group)


def _row(tokens: list[str], columns: tuple[str, ...], header_line: int, number: int) -> NcclRow:
    if len(tokens) != len(columns):
        raise ParseError(
            number, f"expected {len(columns)} columns as in the header on line {header_line}, found {len(tokens)}"
        )
    lead = dict(zip(columns[: len(columns) - 8], tokens[: len(columns) - 8], strict=True))
    cells = tokens[len(columns) - 8 :]
    return NcclRow(
        size_bytes=_whole("size", lead["size"], number),
        count=_whole("count", lead["count"], number),
        type=lead["type"],
        redop=lead.get("redop"),
        root=_whole("root", lead["root"], number, signed=True) if "root" in lead else None,
        out_of_place=_measurement(cells[:4], columns[-1], "out-of-place", number),
        in_place=_measurement(cells[4:], columns[-1], "in-place", number),
        line_number=number,
    )


def _measurement(cells: list[str], check: str, where: str, number: int) -> Measurement:
    time, algbw, busbw, checked = cells
    wrong = error = None
    if checked != "N/A":
        if check == "#wrong":
            wrong = _whole(f"{where} #wrong", checked, number)
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
