"""Recording progress: tokens, throughput and MFU by hand, re-sends that change nothing, restarts and lost work,
refused and implausible figures, and chunks from the reporter skipped by their offset."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from django.core.exceptions import ValidationError

from tests.training.samples import SAMPLES
from workloads.training.figures import workload_progress
from workloads.training.ingest import record_log, record_points
from workloads.training.logs import Point
from workloads.training.models import LogSource, ProgressHour, ProgressPoint, RunStart
from workloads.training.services import run_for

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 11, 20, tzinfo=UTC)
BATCH, SEQ = 1024, 4096
TOKENS_PER_STEP = BATCH * SEQ  # 4,194,304


def steps(first: int, last: int, *, start: datetime = T0, seconds: float = 10.0, loss: float = 3.0, **extra):
    """Iterations first..last, one every `seconds`, each BATCH samples; times from `start`."""
    return [
        Point(
            iteration=i,
            line=i - first + 1,
            at=start + timedelta(seconds=seconds * (i - first + 1)),
            consumed_samples=BATCH * i,
            loss=loss,
            step_seconds=seconds,
            **extra,
        )
        for i in range(first, last + 1)
    ]


@pytest.fixture
def run(p5_workload):
    return run_for(workload=p5_workload, name="main", sequence_length=SEQ)


def test_tokens_throughput_and_mfu_are_computed_by_the_definitions(run, p5_workload):
    outcome = record_points(run=run, points=steps(1, 100))
    assert (outcome.created, outcome.unchanged, outcome.restarts) == (100, 0, 0)
    figures = workload_progress(p5_workload, now=T0 + timedelta(hours=1)).runs[0]
    # 100 steps × 1,024 samples × 4,096 tokens = 419,430,400 tokens, in 100 × 10 s.
    assert figures.tokens == 419_430_400
    assert figures.tokens_per_second == pytest.approx(419_430.4)
    # 64 GPUs (DP 64) of 989 TFLOP/s: 6 × 8e9 × 419,430.4 ÷ (64 × 989e12) = 2.01326592e16 ÷ 6.3296e16 = 0.318072.
    assert figures.accelerators == 64 and figures.peak_tflops == 989
    assert figures.mfu == pytest.approx(0.318072, abs=1e-6)
    # 6 × 8e9 × 419,430.4 ÷ 64 ÷ 1e12 = 314.57 TFLOP/s a GPU.
    assert figures.computed_tflops == pytest.approx(314.5728)
    assert figures.productive_hours == pytest.approx(1000 / 3600)
    assert figures.fraction == pytest.approx(419_430_400 / 2e12)


def test_the_same_points_sent_twice_change_nothing(run):
    record_points(run=run, points=steps(1, 50))
    before = list(ProgressHour.objects.values_list("iterations", "new_tokens", "productive_seconds"))
    outcome = record_points(run=run, points=steps(1, 50))
    assert (outcome.created, outcome.unchanged, outcome.restarts, outcome.computed_again) == (0, 50, 0, 0)
    assert list(ProgressHour.objects.values_list("iterations", "new_tokens", "productive_seconds")) == before
    run.refresh_from_db()
    assert (run.points, run.restarts, run.last_iteration) == (50, 0, 50)


def test_an_iteration_going_back_is_a_restart_and_the_iterations_computed_again_are_lost(run, p5_workload):
    record_points(run=run, points=steps(1, 100))
    # The job died after iteration 100 and resumed from the checkpoint of iteration 80, an hour later.
    later = T0 + timedelta(hours=1)
    outcome = record_points(run=run, points=steps(81, 120, start=later, loss=2.9))
    assert (outcome.restarts, outcome.computed_again, outcome.created) == (1, 20, 20)
    run.refresh_from_db()
    assert (run.restarts, run.lost_iterations, run.last_iteration, run.high_iteration) == (1, 20, 120, 120)
    assert run.tokens == 120 * TOKENS_PER_STEP
    restart = RunStart.objects.get(run=run, kind=RunStart.Kind.RESTART)
    assert (restart.from_iteration, restart.resumed_at_iteration, restart.lost_iterations) == (100, 81, 20)
    assert ProgressPoint.objects.get(run=run, iteration=90).loss == 2.9  # the values computed last are kept
    assert ProgressPoint.objects.filter(run=run, computed_again=True).count() == 20
    figures = workload_progress(p5_workload, now=later + timedelta(hours=1)).runs[0]
    # 20 iterations × 10 s computed again; 120 first-time ones productive.
    assert figures.lost_hours == pytest.approx(200 / 3600)
    assert figures.productive_hours == pytest.approx(1200 / 3600)


def test_refused_lines_are_named_and_the_rest_kept(run):
    points = steps(1, 5)
    points[2].step_seconds = -3.0  # iteration 3, line 3
    points[4].consumed_samples = 10  # iteration 5: tokens go down while the iteration goes forward
    outcome = record_points(run=run, points=points)
    assert outcome.created == 3
    messages = [f"line {p.line}: {p.message}" for p in outcome.problems]
    assert messages == [
        "line 3: a negative step time (-3.0 s)",
        "line 5: tokens went down from 16,777,216 to 40,960 while the iteration went forward",
    ]
    assert sorted(ProgressPoint.objects.values_list("iteration", flat=True)) == [1, 2, 4]


def test_a_logged_figure_above_the_peak_is_flagged_and_never_averaged(run, p5_workload):
    points = steps(1, 10, tflops_per_accelerator=400.0)
    points[5].tflops_per_accelerator = 59_892.0  # above H100's 989 TFLOP/s: cannot be
    outcome = record_points(run=run, points=points)
    assert outcome.implausible == 1
    figures = workload_progress(p5_workload, now=T0 + timedelta(hours=1)).runs[0]
    assert figures.logged_tflops == pytest.approx(400.0)
    assert figures.productive_hours == pytest.approx(100 / 3600)  # its step time still counts
    run.refresh_from_db()
    assert run.implausible_points == 1


def test_a_throughput_above_100_percent_mfu_is_flagged_and_left_out_of_the_rate(run, p5_workload):
    points = steps(1, 10)
    points[9].step_seconds = 0.001  # 4.2 G tokens/s on 64 GPUs: 32,000 % MFU
    outcome = record_points(run=run, points=points)
    assert outcome.implausible == 1
    figures = workload_progress(p5_workload, now=T0 + timedelta(hours=1)).runs[0]
    assert figures.tokens_per_second == pytest.approx(419_430.4)  # nine plausible steps
    assert figures.tokens == 10 * TOKENS_PER_STEP  # the tokens still count


MEGATRON = (
    " [2026-11-20 00:{m:02d}:{s:02d}] iteration {i:>8}/  500000 | consumed samples: {samples:>12} | elapsed time per "
    "iteration (ms): 10000.0 | learning rate: 1.000000E-04 | global batch size:  1024 | lm loss: 2.500000E+00 | "
    "loss scale: 1.0 | grad norm: 1.000 | number of skipped iterations:   0 | number of nan iterations:   0 |\n"
)


def megatron_lines(first: int, last: int, *, minute: int = 0) -> str:
    """Megatron-Core lines of iterations first..last, printed `minute` minutes past midnight (a second apart)."""
    return "".join(MEGATRON.format(m=minute, s=i % 60, i=i, samples=i * BATCH) for i in range(first, last + 1))


def test_a_reporter_chunk_sent_again_is_skipped_by_its_offset(run):
    text = megatron_lines(1, 10)
    first = record_log(run=run, text=text, kind=LogSource.Kind.REPORTER, source="/fsx/slurm-1.out#42", offset=0)
    assert (first.format, first.created) == ("megatron", 10)
    again = record_log(run=run, text=text, kind=LogSource.Kind.REPORTER, source="/fsx/slurm-1.out#42", offset=0)
    assert (again.created, again.points, again.skipped_bytes) == (0, 0, len(text.encode()))
    # A chunk overlapping what was read: only its new part is read.
    more = megatron_lines(6, 15)
    overlap = len(megatron_lines(6, 10).encode())
    later = record_log(
        run=run, text=more, kind=LogSource.Kind.REPORTER, source="/fsx/slurm-1.out#42", offset=len(text) - overlap
    )
    assert (later.created, later.restarts, later.skipped_bytes) == (5, 0, overlap)
    source = LogSource.objects.get(run=run)
    assert (source.next_offset, source.lines) == (len(megatron_lines(1, 15)), 15)


def test_in_new_text_an_iteration_going_back_is_a_restart_even_with_the_same_values(run):
    """Offsets tell a re-send from new text: a job that restarts and prints iteration 6 again (later) is a restart."""
    source = "/fsx/slurm-2.out#7"
    record_log(run=run, text=megatron_lines(1, 10), kind=LogSource.Kind.REPORTER, source=source, offset=0)
    after = megatron_lines(6, 12, minute=5)
    outcome = record_log(
        run=run, text=after, kind=LogSource.Kind.REPORTER, source=source, offset=len(megatron_lines(1, 10))
    )
    assert (outcome.restarts, outcome.computed_again, outcome.created) == (1, 5, 2)


def test_a_log_that_prints_no_times_needs_when_it_ended(run):
    line = MEGATRON.split("] ", 1)[1]  # the same line without Megatron's timestamp
    text = "".join(line.format(i=i, samples=i * BATCH) for i in (1, 2))
    with pytest.raises(ValidationError) as refused:
        record_log(run=run, text=text, kind=LogSource.Kind.UPLOAD, source="slurm-3.out")
    assert "ended_at" in refused.value.message_dict
    assert not ProgressPoint.objects.exists() and not LogSource.objects.exists()
    record_log(run=run, text=text, kind=LogSource.Kind.UPLOAD, source="slurm-3.out", ended_at=T0)
    # Counted back from the end, step time by step time: iteration 2 at T0, iteration 1 ten seconds before.
    assert list(ProgressPoint.objects.order_by("iteration").values_list("at", flat=True)) == [
        T0 - timedelta(seconds=10),
        T0,
    ]


def test_a_runs_settings_never_change_within_it(run, p5_workload):
    with pytest.raises(ValidationError) as refused:
        run_for(workload=p5_workload, name="main", sequence_length=8192)
    assert "sequence_length" in refused.value.message_dict
    with pytest.raises(ValidationError) as refused:
        run_for(workload=p5_workload, name="main", phase="sft")
    assert "phase" in refused.value.message_dict
    sft = run_for(workload=p5_workload, name="sft-1", phase="sft")
    assert sft.phase == "sft" and sft.pk != run.pk


@pytest.mark.parametrize("sample", sorted(p.name for p in SAMPLES.glob("*.log")))
def test_every_real_log_sent_in_chunks_gives_the_iterations_read_whole(sample, p5_workload):
    """The reporter sends a log as it grows: a parser carries where it stopped (an HF dict count, DeepSpeed's
    cumulative skipped counter) to the next chunk, so two chunks read as the whole log does."""
    text = (SAMPLES / sample).read_text()
    whole = run_for(workload=p5_workload, name="whole", sequence_length=SEQ)
    split = run_for(workload=p5_workload, name="split", sequence_length=SEQ)
    ended = T0 + timedelta(days=400)  # after any time a sample prints
    record_log(run=whole, text=text, kind=LogSource.Kind.REPORTER, source="a#1", offset=0, ended_at=ended)
    data = text.encode()
    cut = data.find(b"\n", len(data) // 2) + 1 or len(data)
    for offset, part in ((0, data[:cut]), (cut, data[cut:])):
        record_log(
            run=split, text=part.decode(), kind=LogSource.Kind.REPORTER, source="b#1", offset=offset, ended_at=ended
        )

    def iterations(run):
        return list(ProgressPoint.objects.filter(run=run).order_by("iteration").values_list("iteration", "skipped"))

    assert iterations(split) == iterations(whole)
    whole.refresh_from_db()
    split.refresh_from_db()
    assert (split.restarts, split.lost_iterations) == (whole.restarts, whole.lost_iterations)


def test_an_uploaded_log_holding_a_restart_reads_the_same_every_time(run):
    """Uploading a log again changes nothing, the restart inside it included: the last time an iteration was
    computed decides, and it is the point kept."""
    text = megatron_lines(1, 30) + megatron_lines(21, 40, minute=5)
    for _ in range(3):
        record_log(run=run, text=text, kind=LogSource.Kind.UPLOAD, source="slurm-9.out")
        run.refresh_from_db()
        assert (run.restarts, run.lost_iterations, run.last_iteration, run.tokens) == (1, 10, 40, 40 * TOKENS_PER_STEP)


def test_a_point_printed_twice_in_one_post_is_one_point(run):
    points = steps(1, 5)
    again = [replace(point, line=point.line + 5) for point in points[2:]]  # the same three again, times and all
    outcome = record_points(run=run, points=points + again)
    assert (outcome.created, outcome.unchanged, outcome.restarts) == (5, 3, 0)


def test_the_same_timed_log_followed_through_two_sources_is_read_once(run):
    text = megatron_lines(1, 20)
    record_log(run=run, text=text, kind=LogSource.Kind.REPORTER, source="/fsx/a.out#1", offset=0)
    again = record_log(run=run, text=text, kind=LogSource.Kind.REPORTER, source="/fsx/link-to-a.out#1", offset=0)
    assert (again.created, again.unchanged, again.restarts) == (0, 20, 0)


def test_a_new_jobs_log_starting_at_the_last_iteration_is_a_restart(run):
    """Only a chunk continuing the same log completes a step cut between chunks; a new job's log that starts at the
    run's last iteration computed it again."""
    record_log(run=run, text=megatron_lines(1, 10), kind=LogSource.Kind.REPORTER, source="job-1#1", offset=0)
    outcome = record_log(
        run=run, text=megatron_lines(10, 12, minute=9), kind=LogSource.Kind.REPORTER, source="job-2#1", offset=0
    )
    assert (outcome.restarts, outcome.computed_again, outcome.created) == (1, 1, 2)


def test_throughput_counts_only_tokens_whose_time_is_known(run, p5_workload):
    # Three points ten seconds apart, no step time printed: 2 steps' tokens over 20 s (the first step's time is
    # unknown), not 3 steps' tokens over 20 s.
    points = [Point(iteration=i, line=i, at=T0 + timedelta(seconds=10 * i), tokens=1_000 * i) for i in (1, 2, 3)]
    record_points(run=run, points=points)
    figures = workload_progress(p5_workload, now=T0 + timedelta(hours=1)).runs[0]
    assert figures.tokens_per_second == pytest.approx(100.0)


def test_the_logs_world_size_is_the_runs_accelerators(p5_workload):
    p5_workload.data_parallel = 1  # the record's layout says one GPU; the log says 64
    p5_workload.save()
    run = run_for(workload=p5_workload, name="main", sequence_length=SEQ)
    record_log(run=run, text="  world_size ...... 64\n" + megatron_lines(1, 5), kind=LogSource.Kind.UPLOAD, source="a")
    run.refresh_from_db()
    assert run.accelerators == 64
    assert workload_progress(p5_workload, now=T0).runs[0].accelerators == 64


def test_figures_no_run_can_have_are_refused_and_named(run):
    huge = steps(1, 4)
    huge[0].step_seconds = 1e300  # longer than a week
    huge[1].at = datetime(1960, 1, 1, tzinfo=UTC)  # before 2000
    huge[2].consumed_samples = 2**70  # beyond any count
    huge[3].loss = 1.7e308  # beyond a million
    outcome = record_points(run=run, points=huge)
    assert outcome.created == 0
    assert [p.line for p in outcome.problems] == [1, 2, 3, 4]
    assert "over a week" in outcome.problems[0].message and "before 2000" in outcome.problems[1].message


def test_a_line_too_long_for_any_progress_line_is_skipped_unread(run):
    # A `steps:` line padded to megabytes once tied a parser's regular expression up for hours.
    text = "steps: 1 loss: 2.0 " + "a: " * 400_000 + "iter time (s): 1.0\n" + megatron_lines(1, 3)
    outcome = record_log(run=run, text=text, kind=LogSource.Kind.UPLOAD, source="a.out")
    assert (outcome.created, outcome.other_lines, outcome.format) == (3, 1, "megatron")


def test_a_chunk_continuing_an_untimed_log_is_counted_on_from_where_the_last_ended(run):
    line = MEGATRON.split("] ", 1)[1]
    first = "".join(line.format(i=i, samples=i * BATCH) for i in (1, 2))
    second = "".join(line.format(i=i, samples=i * BATCH) for i in (3, 4))
    record_log(run=run, text=first, kind=LogSource.Kind.REPORTER, source="s#1", offset=0, ended_at=T0)
    record_log(
        run=run,
        text=second,
        kind=LogSource.Kind.REPORTER,
        source="s#1",
        offset=len(first),
        ended_at=T0 + timedelta(hours=1),
    )
    # 10 s a step: iterations 3 and 4 follow iteration 2 (at T0), not the file's later modification time.
    assert list(ProgressPoint.objects.order_by("iteration").values_list("at", flat=True)) == [
        T0 - timedelta(seconds=10), T0, T0 + timedelta(seconds=10), T0 + timedelta(seconds=20),
    ]  # fmt: skip
