"""Parse an `nccom-test` log (AWS Neuron's collective benchmark, the Trainium counterpart of nccl-tests) into the
run shape nccl-tests logs give (workloads.validation.nccl.NcclRun), so one verdict judges both.

Format, from the NCCOM-TEST user guide (aws-neuron/aws-neuron-sdk tools/neuron-sys-tools/nccom-test.rst; its
2-node trn1 example is tests/samples/nccom_test_all_reduce_trn1_2node.txt):

- An optional command line (`[NEURON_RT_ROOT_COMM_ID=… ]nccom-test -r 64 -N 2 … allr …`): the ranks (-r), nodes
  (-N, 1 when absent) and the collective (all_reduce/allr, all_gather/allg, reduce_scatter/redsct, sendrecv…).
- The header `size(B)  count(elems)  type  time(us)  algbw(GB/s)  busbw(GB/s)`, a row per size, and
  `Avg bus bandwidth:  9.3924GB/s`. A `Failure running neuron-bench` row or `N errors found - test failed` is a
  failed run: refused, with the tool's words (its log file says why).
- The guide defines the GB/s columns as gibibytes per second (algbw = size / time): they are converted to GB/s
  (10^9 bytes) here, the unit nccl-tests and the baselines use. 47.09 "GB/s" in the log is 50.56 GB/s.

Only all-reduce is judged (the baselines are all-reduce peaks): a log of another collective is refused by name.
Each row must be arithmetic the tool could have printed: count × the type's size = size, algbw = size / time
(within the rounding of the printed figures), busbw at most 2 × algbw (all-reduce's 2(n-1)/n): a bandwidth of
1e30 or a negative size is a 400 naming its line, never a verdict.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from workloads.telemetry_errors import ParseError
from workloads.validation.nccl import Baseline, Measurement, NcclRow, NcclRun

HEADER = ("size(B)", "count(elems)", "type", "time(us)", "algbw(GB/s)", "busbw(GB/s)")
GIB_PER_S_IN_GB_PER_S = 2**30 / 1e9
TYPE_BYTES = {"uint8": 1, "int8": 1, "fp8": 1, "uint16": 2, "int16": 2, "fp16": 2, "bf16": 2,
              "uint32": 4, "int32": 4, "fp32": 4, "uint64": 8, "int64": 8, "fp64": 8}  # fmt: skip
COLLECTIVES = {"allr": "all_reduce", "all_reduce": "all_reduce", "allg": "all_gather", "all_gather": "all_gather",
               "redsct": "reduce_scatter", "reduce_scatter": "reduce_scatter", "sendrecv": "sendrecv",
               "alltoall": "all_to_all", "all_to_all": "all_to_all", "permute": "permute"}  # fmt: skip
MAX_SIZE = 2**40  # 1 TiB: nccom-test's sizes are device memory buffers
MAX_RANKS = 100_000
# Relative slack between the printed algbw and size/time: time is a P50 printed in whole microseconds.
ALGBW_SLACK = 0.05
_AVERAGE = re.compile(r"Avg bus bandwidth:\s*(\S+?)\s*GB/s$")
_FAILED = re.compile(r"(\d+) errors? found - test failed|Failure running neuron-bench")


# The guide's 2-node trn1 all-reduce (the sample): 47.09 GiB/s at 1 GiB, i.e. 50.56 GB/s.
TRN1_MULTINODE_BASELINE = Baseline(
    instance_type="trn1.32xlarge",
    nodes=2,
    size_bytes=2**30,
    busbw_gbps=50.56,
    source="aws-neuron/aws-neuron-sdk tools/neuron-sys-tools/nccom-test.rst @ f25691d: nccom-test all-reduce, 64 "
    "ranks on 2 trn1 instances, bus bandwidth peaking at 47.09 GiB/s (50.56 GB/s) at 1 GiB",
)


@dataclass(frozen=True)
class NccomRun:
    run: NcclRun
    collective: str
    nodes: int | None  # -N on the command line; None when the log has no command line


def is_nccom(text: str) -> bool:
    """An nccom-test log: its header's first columns (nccl-tests' header reads `#  size  count  type`)."""
    return any(line.split()[:2] == list(HEADER[:2]) for line in text.split("\n", 200)[:200])


def parse_nccom_log(text: str) -> NccomRun:
    lines = text.split("\n")
    header_line = 0
    rows: list[NcclRow] = []
    average: float | None = None
    ranks: int | None = None
    nodes: int | None = None
    collective = "all_reduce"
    for number, raw in enumerate(lines, start=1):
        content = raw.removesuffix("\r").strip()
        cut = number == len(lines)
        if not content:
            continue
        words = content.split()
        if failed := _FAILED.search(content):
            raise ParseError(number, f"nccom-test reported a failed run: {failed.group(0)}")
        if "nccom-test" in content and not header_line:
            ranks, nodes, collective = _command(words, number)
        elif words[:2] == list(HEADER[:2]):
            if header_line:
                raise ParseError(number, f"a second result table starts here (the first on line {header_line})")
            if tuple(words) != HEADER:
                raise ParseError(number, f"unsupported columns {' '.join(words)!r}: expected {' '.join(HEADER)}")
            header_line = number
        elif match := _AVERAGE.match(content):
            _refuse_if_cut(cut, number)
            average = _float(match.group(1), "average bus bandwidth", number) * GIB_PER_S_IN_GB_PER_S
        elif header_line and words[0].isdigit():
            if average is not None:
                raise ParseError(number, "a result row after the average")
            _refuse_if_cut(cut, number)
            rows.append(_row(words, number))
    last = max(len(lines) - (not lines[-1]), 1)
    if not header_line:
        raise ParseError(last, "no result table: the log never prints nccom-test's 'size(B) count(elems) ...' header")
    if not rows:
        raise ParseError(last, f"the result table (header on line {header_line}) has no rows")
    if collective != "all_reduce":
        raise ParseError(
            None, f"this is a {collective} run: only all-reduce (nccom-test … allr) is judged against a baseline"
        )
    peak = max(rows, key=lambda row: row.out_of_place.busbw_gbps)
    run = NcclRun(
        rows=tuple(rows),
        peak_busbw_gbps=peak.out_of_place.busbw_gbps,
        peak_size_bytes=peak.size_bytes,
        avg_busbw_gbps=average,
        out_of_bounds=None,
        hosts=(),
        ranks=ranks,
        elided=False,
        collective=collective,  # all_reduce: judged against the all_reduce baselines of its type
    )
    return NccomRun(run=run, collective=collective, nodes=nodes)


def _command(words: list[str], number: int) -> tuple[int | None, int, str]:
    ranks, nodes, collective = None, 1, None
    options = {"-r": "ranks", "--nworkers": "ranks", "-N": "nodes", "--nnodes": "nodes"}
    for position, word in enumerate(words):
        if word in options and position + 1 < len(words):
            value = _whole(words[position + 1], options[word], number)
            if options[word] == "ranks":
                ranks = value
            else:
                nodes = value
        elif word in COLLECTIVES and collective is None:
            collective = COLLECTIVES[word]
    if ranks is not None and not 1 <= ranks <= MAX_RANKS:
        raise ParseError(number, f"-r {ranks}: between 1 and {MAX_RANKS} ranks")
    if collective is None:
        raise ParseError(number, "the nccom-test command line names no collective (allr, allg, redsct, ...)")
    return ranks, nodes, collective


def _row(words: list[str], number: int) -> NcclRow:
    if len(words) != len(HEADER):
        raise ParseError(number, f"a result row has {len(HEADER)} columns ({' '.join(HEADER)}), found {len(words)}")
    size, count = _whole(words[0], "size", number), _whole(words[1], "count", number)
    kind = words[2]
    time_us = _float(words[3], "time", number)
    algbw, busbw = _float(words[4], "algbw", number), _float(words[5], "busbw", number)
    if not 0 < size <= MAX_SIZE:
        raise ParseError(number, f"size {size} B: between 1 B and {MAX_SIZE} B")
    if kind in TYPE_BYTES and count * TYPE_BYTES[kind] != size:
        raise ParseError(number, f"{count} {kind} elements are {count * TYPE_BYTES[kind]} B, not {size} B")
    if not re.fullmatch(r"[a-z0-9_]{1,16}", kind):
        raise ParseError(number, f"{kind[:20]!r} is not a data type")
    if time_us <= 0:
        raise ParseError(number, f"time {time_us:g} us: a collective takes some time")
    computed = size / time_us * 1e6 / 2**30  # GiB/s, as the tool defines algbw
    if abs(algbw - computed) > 0.01 + ALGBW_SLACK * computed:
        raise ParseError(
            number, f"algbw {algbw:g} GB/s is not size / time ({computed:.2f} GiB/s for {size} B in {time_us:g} us)"
        )
    if busbw > 2 * computed * (1 + ALGBW_SLACK) + 0.01:
        raise ParseError(number, f"busbw {busbw:g} GB/s is more than twice algbw ({computed:.2f}): not all-reduce")
    measurement = Measurement(
        time_us=time_us,
        algbw_gbps=round(algbw * GIB_PER_S_IN_GB_PER_S, 4),
        busbw_gbps=round(busbw * GIB_PER_S_IN_GB_PER_S, 4),
        wrong=None,
        max_error=None,
    )
    # nccom-test runs one placement: it is both of the chart's series.
    return NcclRow(size, count, kind, None, None, measurement, measurement, number)


def _whole(text: str, what: str, number: int) -> int:
    if not text.isascii() or not text.isdigit() or len(text) > 15:
        raise ParseError(number, f"{what} must be a whole number, found {text[:20]!r}")
    return int(text)


def _float(text: str, what: str, number: int) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ParseError(number, f"{what} {text[:20]!r} is not a number") from None
    if not math.isfinite(value) or value < 0:
        raise ParseError(number, f"{what} must be a number from 0, found {text[:20]!r}")
    return value


def _refuse_if_cut(cut: bool, number: int) -> None:
    if cut:
        raise ParseError(
            number, "the log ends in the middle of this line (no line feed after it): it may have been cut"
        )
