"""nccl-tests logs: the two real p5 runs, older column sets, noise, damage, and the judgement."""

import re
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workloads.telemetry_errors import ParseError
from workloads.validation.nccl import (
    P5_MULTINODE_BASELINE,
    Measurement,
    NcclRow,
    judge,
    parse_nccl_log,
)

SAMPLES = (Path(__file__).parent.parent / "samples" / "nccl_all_reduce_p5_2node.txt").read_text()
SRUN_LOG = SAMPLES[: SAMPLES.index("# --- (B)")]  # (A): srun --label, 8 B to 16 GiB, no summary
MPIRUN_LOG = SAMPLES[SAMPLES.index("# --- (B)") :]  # (B): mpirun --tag-output, "..." elision, summary
GIB = 2**30


def unprefixed(log):
    return re.sub(r"^(?:0: |\[1,0\]<stdout>:)", "", log, flags=re.MULTILINE)


HEADER_LINES = """\
# nThread 1 nGpus 1 minBytes 1073741824 maxBytes 2147483648 step: 2(factor) warmup iters: 5 iters: 20
#
# Using devices
#  Rank  0 Group  0 Pid  41233 on p5-dy-p5-1 device  0 [0x53] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid  41234 on p5-dy-p5-1 device  1 [0x64] NVIDIA H100 80GB HBM3
#  Rank  2 Group  0 Pid  17001 on p5-dy-p5-2 device  0 [0x53] NVIDIA H100 80GB HBM3
#  Rank  3 Group  0 Pid  17002 on p5-dy-p5-2 device  1 [0x64] NVIDIA H100 80GB HBM3
#
"""
TABLE_HEADER = """\
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
"""
ROWS = """\
  1073741824     268435456     float     sum      -1   4607.6  233.04  436.95      0   4565.6  235.18  440.96      0
  2147483648     536870912     float     sum      -1   9074.5  236.65  443.72      0   9108.5  235.77  442.06      0
"""
SUMMARY = "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 439.9225\n#\n"


# -- The real samples -----------------------------------------------------------------------------


def test_the_srun_run_peaks_at_487_gb_per_s_at_16_gib():
    run = parse_nccl_log(SRUN_LOG)
    assert len(run.rows) == 32
    assert (run.peak_busbw_gbps, run.peak_size_bytes) == (487.26, 17179869184)
    assert run.peak_size_bytes == 16 * GIB
    assert (run.avg_busbw_gbps, run.out_of_bounds) == (None, None)  # the excerpt has no summary
    assert (run.hosts, run.ranks, run.elided) == ((), None, False)
    assert run.rows[0] == NcclRow(
        size_bytes=8,
        count=2,
        type="float",
        redop="sum",
        root=-1,
        out_of_place=Measurement(time_us=69.12, algbw_gbps=0.0, busbw_gbps=0.0, wrong=0, max_error=None),
        in_place=Measurement(time_us=72.43, algbw_gbps=0.0, busbw_gbps=0.0, wrong=0, max_error=None),
        line_number=8,
    )
    last = run.rows[-1]
    assert (last.out_of_place.time_us, last.out_of_place.busbw_gbps, last.in_place.busbw_gbps) == (
        66132,
        487.09,
        487.26,
    )
    assert [row.size_bytes for row in run.rows] == [8 * 2**n for n in range(32)]


def test_the_mpirun_run_reports_its_average_and_no_out_of_bounds_values():
    run = parse_nccl_log(MPIRUN_LOG)
    assert (run.avg_busbw_gbps, run.out_of_bounds) == (52.9753, 0)
    assert [row.size_bytes for row in run.rows] == [0, 64 * 2**20, 128 * 2**20, 256 * 2**20, 512 * 2**20, GIB, 2 * GIB]
    assert (run.peak_busbw_gbps, run.peak_size_bytes) == (437.89, 2 * GIB)
    assert run.rows[2].in_place == Measurement(1725.6, 77.78, 145.83, 0, None)  # in-place beat out-of-place here
    assert run.elided  # the README's "..." stands for the rows between 0 B and 64 MiB


def test_both_runs_in_one_log_are_refused():
    with pytest.raises(ParseError, match=r"line 44: a second result table starts here \(the first on line 6\)"):
        parse_nccl_log(SAMPLES)


@pytest.mark.parametrize("log", [SRUN_LOG, MPIRUN_LOG])
def test_a_log_without_launcher_prefixes_reads_the_same(log):
    assert parse_nccl_log(unprefixed(log)).rows == parse_nccl_log(log).rows


def test_padded_srun_labels_and_stderr_tags_are_prefixes_too():
    log = "".join(f" 0: {line}\n" for line in (TABLE_HEADER + ROWS + SUMMARY).splitlines())
    log += "[1,3]<stderr>:p5-dy-p5-2:17002:17002 [1] NCCL INFO comm 0x5 rank 3 nranks 4 - Destroy COMPLETE\n"
    run = parse_nccl_log(log)
    assert (len(run.rows), run.avg_busbw_gbps) == (2, 439.9225)


# -- Header lines, noise and column sets ----------------------------------------------------------


def test_rank_lines_give_the_hosts_and_ranks():
    run = parse_nccl_log(HEADER_LINES + TABLE_HEADER + ROWS + SUMMARY)
    assert (run.hosts, run.ranks) == (("p5-dy-p5-1", "p5-dy-p5-2"), 4)
    assert (run.peak_busbw_gbps, run.peak_size_bytes, run.avg_busbw_gbps) == (443.72, 2 * GIB, 439.9225)


def test_nccl_info_and_warn_lines_and_blank_lines_are_noise():
    noisy = (
        "p5-dy-p5-1:41233:41233 [0] NCCL INFO Bootstrap : Using enp71s0:10.1.0.5<0>\n"
        + HEADER_LINES
        + "p5-dy-p5-1:41233:41299 [0] NCCL INFO NET/OFI Selected Provider is efa (found 32 nics)\n\n"
        + TABLE_HEADER
        + ROWS.splitlines(keepends=True)[0]
        + "\np5-dy-p5-2:17001:17050 [0] NCCL WARN NET/OFI Request 0x7f completed with error\n   \n"
        + "0: p5-dy-p5-1:41233:41301 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n"
        + ROWS.splitlines(keepends=True)[1]
        + SUMMARY
    )
    run = parse_nccl_log(noisy)
    assert [replace(row, line_number=0) for row in run.rows] == [
        replace(row, line_number=0) for row in parse_nccl_log(TABLE_HEADER + ROWS + SUMMARY).rows
    ]
    assert [row.line_number for row in run.rows] == [15, 20]


def test_the_older_column_set_without_root_and_with_an_error_column():
    log = """\
#                                                     out-of-place                       in-place
#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
           8             2   float     sum    42.83    0.00    0.00  1e-07    42.37    0.00    0.00  1e-07
   134217728      33554432   float     sum   1570.4   85.47  160.25  0e+00   1569.4   85.52  160.35    N/A
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 80.15
"""
    run = parse_nccl_log(log)
    assert [(row.redop, row.root) for row in run.rows] == [("sum", None), ("sum", None)]
    assert run.rows[0].out_of_place == Measurement(42.83, 0.0, 0.0, None, 1e-07)
    assert run.rows[1].in_place.max_error is None  # N/A: checking was off
    assert (run.peak_busbw_gbps, run.peak_size_bytes) == (160.35, 134217728)


def test_a_column_set_without_redop_nor_root_and_with_cputime():
    log = """\
#       size         count      type  cputime   algbw   busbw #wrong  cputime   algbw   busbw #wrong
      131072          4096     float    96.55    1.36    1.19      0    95.10    1.38    1.21    N/A
"""
    (row,) = parse_nccl_log(log).rows
    assert (row.redop, row.root, row.in_place.wrong, row.in_place.busbw_gbps) == (None, None, None, 1.21)


@pytest.mark.parametrize(
    "header",
    [
        "#       size         count      type   redop    root     time   algbw   busbw #wrong #bitdiff     time",
        "#       size         count      type   redop    root     time   algbw   busbw #wrong",
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw",
        "#       size         count      type    root   redop     time   algbw   busbw #wrong"
        "     time   algbw   busbw #wrong",
    ],
)
def test_an_unknown_column_set_is_refused(header):
    with pytest.raises(ParseError, match="line 1: unsupported column set"):
        parse_nccl_log(header + "\n" + ROWS)


# -- Damaged logs ---------------------------------------------------------------------------------


def test_a_row_cut_mid_way_names_its_line():
    cut = ROWS.splitlines()[1][:70]  # "  2147483648     536870912     float     sum      -1   9074.5  236.65"
    with pytest.raises(ParseError) as err:
        parse_nccl_log(TABLE_HEADER + ROWS.splitlines(keepends=True)[0] + cut + "\n" + SUMMARY)
    assert str(err.value) == "line 5: expected 13 columns as in the header on line 2, found 7"
    assert err.value.line_number == 5


@pytest.mark.parametrize(
    ("cell", "value", "problem"),
    [
        ("443.72", "4a3.72", "the out-of-place busbw '4a3.72' is not a number"),
        ("9108.5", "nan", "the in-place time 'nan' is not a number"),
        ("236.65", "-", "the out-of-place algbw '-' is not a number"),
        ("536870912", "5e8", "the count '5e8' is not a whole number"),
        ("     -1   9074.5", "     x   9074.5", "the root 'x' is not a whole number"),
        ("442.06      0", "442.06    0.5", "the in-place #wrong '0.5' is not a whole number"),
    ],
)
def test_a_non_numeric_cell_names_its_line_and_column(cell, value, problem):
    rows = ROWS.splitlines(keepends=True)
    with pytest.raises(ParseError, match=f"line 5: {re.escape(problem)}"):
        parse_nccl_log(TABLE_HEADER + rows[0] + rows[1].replace(cell, value) + SUMMARY)


def test_a_log_with_no_rows_at_all_is_refused():
    with pytest.raises(ParseError, match=r"line 9: the result table \(header on line 2\) has no rows"):
        parse_nccl_log(
            TABLE_HEADER
            + "\n"
            + "p5-dy-p5-1:1:1 [0] NCCL WARN Call to connect returned ECONNREFUSED\n"
            + SUMMARY
            + "\n"
        )


def test_a_log_that_never_reached_the_table_is_refused():
    with pytest.raises(ParseError, match="line 8: no result table"):
        parse_nccl_log(HEADER_LINES)
    with pytest.raises(ParseError, match="line 1: no result table"):
        parse_nccl_log("")


def test_a_complete_last_row_without_its_line_feed_is_read():
    run = parse_nccl_log(TABLE_HEADER + ROWS.rstrip("\n"))  # an editor or `tail -c` dropped the final newline
    assert run.rows == parse_nccl_log(TABLE_HEADER + ROWS).rows


def test_a_last_row_short_of_its_columns_without_a_line_feed_is_refused_as_cut():
    log = TABLE_HEADER + ROWS.rstrip("\n").rsplit(" ", 1)[0]  # the #wrong cell never arrived
    with pytest.raises(ParseError, match="line 5: the log ends in the middle of this line"):
        parse_nccl_log(log)


def test_a_complete_summary_without_its_line_feed_is_read():
    run = parse_nccl_log(TABLE_HEADER + ROWS + "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 439.92 ")
    assert (run.out_of_bounds, run.avg_busbw_gbps) == (0, 439.92)


def test_an_old_style_summary_ending_in_its_number_without_a_line_feed_is_refused():
    with pytest.raises(ParseError, match="line 7: the log ends in the middle"):
        parse_nccl_log(TABLE_HEADER + ROWS + "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 439.92")


def test_a_row_after_the_summary_is_refused():
    with pytest.raises(ParseError, match="line 7: a result row after the summary on line 6"):
        parse_nccl_log(TABLE_HEADER + ROWS + SUMMARY.splitlines(keepends=True)[1] + ROWS)


@pytest.mark.parametrize(
    ("summary", "problem"),
    [
        ("# Out of bounds values : many FAILED\n", "line 6: the out-of-bounds count 'many' is not a whole number"),
        ("# Avg bus bandwidth    : fast\n", "line 6: the average bus bandwidth 'fast' is not a number"),
    ],
)
def test_a_malformed_summary_is_refused(summary, problem):
    with pytest.raises(ParseError, match=problem):
        parse_nccl_log(TABLE_HEADER + ROWS + summary)


def test_out_of_bounds_values_are_counted():
    run = parse_nccl_log(TABLE_HEADER + ROWS + "# Out of bounds values : 12 FAILED\n# Avg bus bandwidth    : 439.9\n")
    assert run.out_of_bounds == 12


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_a_log_cut_anywhere_is_a_prefix_of_its_rows_or_refused(data):
    log = data.draw(st.sampled_from([SRUN_LOG, MPIRUN_LOG, HEADER_LINES + TABLE_HEADER + ROWS + SUMMARY]))
    whole = parse_nccl_log(log)
    cut = log[: data.draw(st.integers(0, len(log)))]
    try:
        run = parse_nccl_log(cut)
    except ParseError:
        return
    assert run.rows == whole.rows[: len(run.rows)]
    assert run.avg_busbw_gbps in (None, whole.avg_busbw_gbps)
    assert run.out_of_bounds in (None, whole.out_of_bounds)
    assert run.peak_busbw_gbps == max(max(r.out_of_place.busbw_gbps, r.in_place.busbw_gbps) for r in run.rows)


# -- Judging a run --------------------------------------------------------------------------------


def test_the_default_baseline_is_the_srun_samples_peak():
    assert (P5_MULTINODE_BASELINE.busbw_gbps, P5_MULTINODE_BASELINE.size_bytes) == (487.0, 16 * GIB)
    assert (P5_MULTINODE_BASELINE.instance_type, P5_MULTINODE_BASELINE.nodes) == ("p5.48xlarge", 2)


def test_the_srun_run_passes_against_the_p5_baseline():
    verdict = judge(parse_nccl_log(SRUN_LOG))
    assert (verdict.verdict, verdict.passed, verdict.reasons) == ("passed", True, ())
    assert (verdict.peak_busbw_gbps, verdict.peak_size_bytes, verdict.baseline_busbw_gbps) == (487.26, 16 * GIB, 487.0)
    assert verdict.fraction == pytest.approx(1.0005, abs=1e-4)


def test_the_mpirun_run_that_stopped_at_2_gib_is_suspect():
    verdict = judge(parse_nccl_log(MPIRUN_LOG), 487.0, 0.9)
    assert (verdict.verdict, verdict.passed) == ("suspect", False)
    assert verdict.fraction == pytest.approx(437.89 / 487.0)
    assert verdict.reasons == (
        "peak bus bandwidth 437.89 GB/s (at 2 GiB) is 89.9% of the 487 GB/s baseline, below 90%",
    )
    assert judge(parse_nccl_log(MPIRUN_LOG), 487.0, 0.85).passed


def test_wrong_values_make_a_fast_run_suspect():
    rows = ROWS.replace("442.06      0", "442.06      3")
    verdict = judge(parse_nccl_log(TABLE_HEADER + rows + "# Out of bounds values : 2 FAILED\n"), 440.0, 0.9)
    assert (verdict.verdict, verdict.wrong_values) == ("suspect", 5)
    assert verdict.reasons == ("5 wrong values reported: the collective returned bad data",)


@pytest.mark.parametrize(("baseline", "fraction"), [(0, 0.9), (-1, 0.9), (487, 0), (487, 1.5)])
def test_judge_refuses_a_meaningless_baseline_or_fraction(baseline, fraction):
    with pytest.raises(ValueError):
        judge(parse_nccl_log(SRUN_LOG), baseline, fraction)
