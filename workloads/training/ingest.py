"""Recording a run's progress: points from a log chunk, an upload or a script's post, kept idempotent.

One entry, `record_progress`, under the run's row lock:

1. **What is new.** A reporter chunk carries its log's byte offset: text before the source's `next_offset` was read
   already and is skipped, so a chunk sent twice changes nothing, and every point in new text is new work. An
   upload or a script's post carries no offset: a point equal to the one kept for its iteration is a duplicate.
   A point that carries its own time (a log that prints times, a script's `time`) is a duplicate only at that time.
2. **Restarts.** An iteration at or below the last one, in new work, is the job resuming from a checkpoint: a
   RunStart is recorded, and the iterations up to the highest ever reached are computed again — lost work.
3. **Times.** A point's time is the log's own when it prints one; otherwise counted back from the time the chunk's
   last line was written (`ended_at`: the log file's modification time for the reporter), step time by step time.
4. **Plausibility.** A negative step time, or tokens going down while the iteration goes forward, is refused and the
   line named; a logged TFLOP/s above the accelerator's dense BF16 peak, or a throughput above 100 % MFU, is kept
   but flagged implausible and left out of every average.
5. **Sums.** Each hour's work (workloads.training.models.ProgressHour) and the run's running state are updated in the
   same transaction, so pages and the API read those, never the points.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext as _

from workloads.training.figures import accelerators_of, peak_tflops_of
from workloads.training.logs import FORMATS, ParsedLog, Point, Problem, parse_log
from workloads.training.models import (
    MAX_ACCELERATORS,
    MAX_SEQUENCE_LENGTH,
    LogSource,
    ProgressHour,
    ProgressPoint,
    RunStart,
    TrainingRun,
)

MAX_PROBLEMS_SHOWN = 20
SILENCE = timedelta(minutes=15)
# What a logged figure may be: a step of over a week, a time before 2000 or after tomorrow, a count past what the
# database holds or a loss beyond a million is no training's; the point is refused and its line named.
MAX_STEP_SECONDS = 7 * 86_400
EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)
TOO_EARLY = EARLIEST - timedelta(seconds=1)
MAX_COUNT = 2**62
MAX_LOSS = 1e6
BATCH = 5_000
POINT_FIELDS = ("tokens", "loss", "learning_rate", "grad_norm", "step_seconds", "tflops_logged", "tokens_per_second")


@dataclass
class Outcome:
    """What one post did, as the API and the upload page report it."""

    lines: int = 0  # lines of new text read
    points: int = 0  # points in the new text or the post
    created: int = 0
    computed_again: int = 0
    unchanged: int = 0  # duplicates
    restarts: int = 0
    implausible: int = 0
    other_lines: int = 0
    problems: list[Problem] = field(default_factory=list)
    skipped_bytes: int = 0  # text already read (a chunk sent again)
    format: str | None = None
    last_at: datetime | None = None  # the time of the post's last point recorded

    @property
    def format_label(self) -> str:
        parser = FORMATS.get(self.format or "")
        return parser.label if parser else ""

    def as_dict(self) -> dict:
        return {
            "format": self.format,
            "lines": self.lines,
            "points": self.points,
            "created": self.created,
            "computed_again": self.computed_again,
            "unchanged": self.unchanged,
            "restarts": self.restarts,
            "implausible": self.implausible,
            "other_lines": self.other_lines,
            "refused_lines": len(self.problems),
            "problems": [f"line {p.line}: {p.message}" for p in self.problems[:MAX_PROBLEMS_SHOWN]],
            "already_read_bytes": self.skipped_bytes,
        }


def record_log(
    *,
    run: TrainingRun,
    text: str,
    kind: str,
    source: str,
    offset: int | None = None,
    ended_at: datetime | None = None,
    log_format: str | None = None,
) -> Outcome:
    """Read a log chunk (the reporter's, from `offset` in `source`) or a whole uploaded log into the run. A log that
    prints no times needs `ended_at` (the reporter always sends its file's modification time): an old log's lines
    would otherwise be dated now. Raises ValidationError for that, and then keeps nothing."""
    with transaction.atomic():
        run = TrainingRun.objects.select_for_update().select_related("workload").get(pk=run.pk)
        log_source, _created = LogSource.objects.get_or_create(
            run=run, kind=kind, name=source[:500], defaults={"organization_id": run.organization_id}
        )
        skipped = 0
        # A chunk continuing its log (the reporter's next one) reads on where the last stopped: its parser's state,
        # its format, its time; a log read from its start (an upload, a first chunk) starts afresh, so reading it
        # again gives the same iterations.
        continues = bool(offset) and offset <= log_source.next_offset
        if offset is not None:
            data = text.encode("utf-8")
            if offset + len(data) <= log_source.next_offset:
                return Outcome(skipped_bytes=len(data))  # sent again: every byte was read already
            if offset < log_source.next_offset:
                skipped = log_source.next_offset - offset
                text = data[skipped:].decode("utf-8", errors="replace")
            log_source.next_offset = offset + len(data)
        state = log_source.parser_state if continues else {}
        settings = state.get("settings") or {}
        parsed = parse_log(
            text.replace("\x00", ""),
            format=log_format or (run.log_format if continues else None) or None,
            options={**settings, **_options(run)},
            carried=state.get("carried"),
        )
        parsed.settings = {**settings, **parsed.settings}
        log_source.parser_state = {"settings": parsed.settings, "carried": parsed.carried}
        if ended_at is None and any(point.at is None for point in parsed.points):
            raise ValidationError(
                {"ended_at": [_("This log prints no times: give the time its last line was written (the file's "
                                "modification time, `ls -l --time-style=full-iso`).")]}
            )  # fmt: skip
        after = log_source.last_at if continues else None
        outcome = _record(run, parsed, new_text=offset is not None, continues=continues, ended_at=ended_at, after=after)
        log_source.last_at = outcome.last_at or log_source.last_at
        outcome.skipped_bytes = skipped
        outcome.lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
        log_source.lines += outcome.lines
        log_source.other_lines += parsed.other_lines
        log_source.problems += len(parsed.problems)
        if outcome.problems:
            last = outcome.problems[-1]
            log_source.last_problem = f"line {last.line}: {last.message}".replace("\x00", "")[:500]
        log_source.save()
        return outcome


def record_points(*, run: TrainingRun, points: list[Point], ended_at: datetime | None = None) -> Outcome:
    """A script's JSON points (already validated) into the run: the same rules as a log's."""
    with transaction.atomic():
        run = TrainingRun.objects.select_for_update().select_related("workload").get(pk=run.pk)
        log_source, _created = LogSource.objects.get_or_create(
            run=run, kind=LogSource.Kind.API, name="api", defaults={"organization_id": run.organization_id}
        )
        parsed = ParsedLog(format=None, points=points, problems=[], other_lines=0, settings={})
        outcome = _record(run, parsed, new_text=False, continues=False, ended_at=ended_at)
        log_source.lines += len(points)
        log_source.problems += len(outcome.problems)
        log_source.save()
        return outcome


def _options(run: TrainingRun) -> dict:
    return {"seq_length": run.sequence_length} if run.sequence_length else {}


class _Run:
    """The run's figures the points need, resolved once per post."""

    def __init__(self, run: TrainingRun, parsed: ParsedLog) -> None:
        settings = parsed.settings
        self.sequence_length = run.sequence_length or _int(settings.get("seq_length"), MAX_SEQUENCE_LENGTH)
        self.batch = _int(settings.get("global_batch_size"))
        self.accelerators = accelerators_of(run)
        self.peak = peak_tflops_of(run)
        self.parameters = run.workload.active_parameter_count or run.workload.parameter_count


def _int(value, limit: int = MAX_COUNT) -> int | None:
    """A setting the log printed (a sequence length, a batch, a world size), when it is a count a run can have."""
    try:
        number = int(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return number if 0 < number <= limit else None


def _record(
    run: TrainingRun,
    parsed: ParsedLog,
    *,
    new_text: bool,
    continues: bool,
    ended_at: datetime | None,
    after: datetime | None = None,
) -> Outcome:
    outcome = Outcome(format=parsed.format, points=len(parsed.points), other_lines=parsed.other_lines)
    outcome.problems.extend(parsed.problems)
    if parsed.format and not run.log_format:
        run.log_format = parsed.format
    if not run.sequence_length and _int(parsed.settings.get("seq_length"), MAX_SEQUENCE_LENGTH):
        run.sequence_length = _int(parsed.settings["seq_length"], MAX_SEQUENCE_LENGTH)
    world_size = _int(parsed.settings.get("world_size"), MAX_ACCELERATORS * 64)
    if not run.accelerators and world_size:
        # The log's world size says what the run trains on, better than the record's layout: kept with the run.
        run.accelerators = min(accelerators_of(run, logged_world_size=world_size) or 0, MAX_ACCELERATORS) or None
    if not parsed.points:
        run.save()
        return outcome
    facts = _Run(run, parsed)
    if continues and run.last_iteration is not None and parsed.points[0].iteration == run.last_iteration:
        # A format printing a step over several lines (DeepSpeed's engine line, then its `steps:` line) cut
        # between two chunks: the first point completes the one kept, it is neither new work nor a restart.
        _complete(run, parsed.points.pop(0), facts)
        outcome.unchanged += 1
        if not parsed.points:
            run.save()
            return outcome
    own_time = {id(point) for point in parsed.points if point.at is not None}  # printed or posted, not counted back
    points, refused = _timed(_bounded(parsed.points, outcome), ended_at or timezone.now(), after=after)
    outcome.problems.extend(refused)
    prepared = []
    for point in points:
        row, problem = _row(run, point, facts)
        if problem:
            outcome.problems.append(problem)
        else:
            prepared.append((point, row))
    # What was sent before: a re-post (no offset says the text is new), or a point carrying its own time read again
    # (the same log followed twice). The last occurrence of an iteration in the post decides: when it is the point
    # kept, every occurrence is a re-send, the restart inside an uploaded log included.
    existing = {}
    if run.high_iteration is not None and (not new_text or own_time):
        low = min(point.iteration for point, _row_ in prepared) if prepared else run.high_iteration + 1
        if low <= run.high_iteration:
            existing = {
                row["iteration"]: row
                for row in ProgressPoint.objects.filter(
                    run=run, iteration__gte=low, iteration__lte=run.high_iteration
                ).values("iteration", "at", *POINT_FIELDS)
            }
    final = {point.iteration: (point, row) for point, row in prepared}
    resent = {
        iteration
        for iteration, (point, row) in final.items()
        if iteration in existing
        and (not new_text or id(point) in own_time)
        and _same(existing[iteration], row, id(point) in own_time)
    }
    seen: dict[int, ProgressPoint] = {}
    rows: list[ProgressPoint] = []
    starts: list[RunStart] = []
    hours: dict[datetime, dict] = defaultdict(_hour)
    last, high, previous_at = run.last_iteration, run.high_iteration, run.last_point_at
    # The tokens at the last point; None before a run's first point that starts mid-run (what came before is unknown).
    tokens: int | None = run.tokens if last is not None else None
    for point, row in prepared:
        repeat = seen.get(point.iteration)
        if point.iteration in resent or (repeat is not None and _same(_values(repeat), row, id(point) in own_time)):
            outcome.unchanged += 1  # sent before, or printed twice in this post
            continue
        seen[point.iteration] = row
        span = max(point.iterations_in_interval, 1)
        before = tokens
        start = None
        if last is None:
            start = RunStart.Kind.FIRST
            if point.iteration <= span:
                before = 0  # the run's very first iterations: every token was trained here
        elif point.iteration <= last:
            # The iterations went back: a restart from a checkpoint. What the checkpoint held is unknown here.
            start, before = RunStart.Kind.RESTART, None
            run.restarts += 1
            outcome.restarts += 1
            hours[_hour_of(row.at)]["restarts"] += 1
        else:
            span = point.iteration - last
            if row.tokens is not None and tokens is not None and row.tokens < tokens:
                message = _("tokens went down from %(before)s to %(after)s while the iteration went forward") % {
                    "before": f"{tokens:,}",
                    "after": f"{row.tokens:,}",
                }
                outcome.problems.append(Problem(point.line, message))
                continue
            if previous_at is not None and row.at - previous_at > _silence(row.step_seconds, span):
                start = RunStart.Kind.RESUMED
        if start:
            starts.append(
                RunStart(
                    organization_id=run.organization_id,
                    run=run,
                    kind=start,
                    at=row.at,
                    from_iteration=last,
                    resumed_at_iteration=point.iteration,
                )
            )
            previous_at = None  # the time since the last point before a start is not a step: no step time from it
        if row.step_seconds is None and point.at is not None and previous_at is not None:
            seconds = (point.at - previous_at).total_seconds() / span
            row.step_seconds = seconds if 0 < seconds < 86_400 else None
        row.computed_again = high is not None and point.iteration <= high
        _rate(row, facts, span, before)
        _add(hours[_hour_of(row.at)], row, span, before)
        if row.computed_again:
            run.lost_iterations += span
            outcome.computed_again += 1
        else:
            run.points += 1
            outcome.created += 1
        run.skipped_iterations += row.skipped
        run.nan_iterations += row.nan
        if row.implausible:
            run.implausible_points += 1
            outcome.implausible += 1
        if row.loss is not None:
            run.last_loss = row.loss
        if row.tokens is not None:
            tokens = row.tokens
        hours[_hour_of(row.at)]["tokens_end"] = tokens
        last, high = point.iteration, point.iteration if high is None else max(high, point.iteration)
        previous_at = row.at
        run.first_point_at = min(run.first_point_at or row.at, row.at)
        run.last_point_at = max(run.last_point_at or row.at, row.at)
        outcome.last_at = row.at
        rows.append(row)
    _save_points(rows)
    RunStart.objects.bulk_create(starts)
    _save_hours(run, hours)
    run.last_iteration, run.high_iteration, run.tokens = last, high, tokens or 0
    run.save()
    return outcome


def _complete(run: TrainingRun, point: Point, facts: _Run) -> None:
    """Fill in what the kept point of this iteration lacks from `point`; a step time it lacked becomes its hour's
    productive time."""
    kept = ProgressPoint.objects.get(run=run, iteration=point.iteration)
    row, _problem = _row(run, point, facts)
    if row is None:
        return
    added = [name for name in POINT_FIELDS if getattr(kept, name) is None and getattr(row, name) is not None]
    for name in added:
        setattr(kept, name, getattr(row, name))
    if not added:
        return
    kept.save(update_fields=added)
    if "step_seconds" in added and not kept.computed_again:
        hour = ProgressHour.objects.filter(run=run, hour=_hour_of(kept.at))
        hour.update(productive_seconds=F("productive_seconds") + kept.step_seconds)


def _bounded(points: list[Point], outcome: Outcome) -> list[Point]:
    """The points whose own figures a run can have; the others refused, their lines named."""
    kept = []
    tomorrow = timezone.now() + timedelta(days=1)
    for point in points:
        problem = None
        if point.step_seconds is not None and point.step_seconds > MAX_STEP_SECONDS:
            problem = _("a step time of %(s)s s, over a week") % {"s": f"{point.step_seconds:,.0f}"}
        elif point.at is not None and not EARLIEST <= point.at <= tomorrow:
            problem = _("a time of %(at)s, before 2000 or after tomorrow") % {"at": point.at.isoformat()}
        elif point.iteration > MAX_COUNT or max(point.tokens or 0, point.consumed_samples or 0) > MAX_COUNT:
            problem = _("an iteration or a count beyond any run (%(n)s)") % {"n": point.iteration}
        elif point.loss is not None and abs(point.loss) > MAX_LOSS:
            problem = _("a loss of %(loss)s, beyond a million") % {"loss": f"{point.loss:.3g}"}
        if problem:
            outcome.problems.append(Problem(point.line, problem))
        else:
            kept.append(point)
    return kept


def _timed(
    points: list[Point], ended_at: datetime, *, after: datetime | None = None
) -> tuple[list[Point], list[Problem]]:
    """Points without their own time, dated: counted forward, step by step, from the last point of the same log
    (`after`, a chunk continuing it; never past `ended_at`), else back from `ended_at`, the time the last line was
    written. One counted back before 2000 is refused (step times that cannot be)."""
    if all(point.at is not None for point in points):
        return points, []
    if after is not None:
        at = after
        for point in points:
            if point.at is not None:
                at = point.at
                continue
            at = min(at + timedelta(seconds=_seconds(point)), ended_at)
            point.at = at
        return points, []
    at = ended_at
    for point in reversed(points):
        if point.at is not None:
            at = point.at
            continue
        point.at = at
        at -= timedelta(seconds=_seconds(point))
    early = [point for point in points if point.at < EARLIEST]
    refused = [
        Problem(p.line, _("counted back from the log's end, a time before 2000: step times too long")) for p in early
    ]
    return [point for point in points if point.at >= EARLIEST], refused


def _seconds(point: Point) -> float:
    return (point.step_seconds or 0) * max(point.iterations_in_interval, 1)


def _silence(step_seconds: float | None, span: int) -> timedelta:
    """A pause between two logged iterations longer than this is a resumption (a new job, a hang), not steps."""
    return max(SILENCE, timedelta(seconds=10 * (step_seconds or 0) * span))


def hour_number(hour: datetime) -> int:
    return int(hour.timestamp()) // 3600


def _hour_of(at: datetime) -> datetime:
    at = at.astimezone(UTC)
    return at.replace(minute=0, second=0, microsecond=0)


def _hour() -> dict:
    return defaultdict(float, first=math.inf, last=0, iterations=0, restarts=0, tokens_end=None)


def _add(hour: dict, row: ProgressPoint, span: int, tokens_before: int | None) -> None:
    """One point's work into its hour: first-time iterations are productive (less the skipped and nan ones, and
    never an implausible one's rate), iterations computed again after a restart are lost."""
    seconds = (row.step_seconds or 0) * span
    hour["iterations"] += 1
    hour["first"] = min(hour["first"], row.iteration)
    hour["last"] = row.iteration
    if row.computed_again:
        hour["lost_seconds"] += seconds
    else:
        bad = min(span, row.skipped + row.nan)
        hour["skipped_seconds"] += (row.step_seconds or 0) * bad
        if tokens_before is not None and row.tokens is not None and not getattr(row, "rate_implausible", False):
            gained = max(row.tokens - tokens_before, 0)
            hour["new_tokens"] += gained
            if row.step_seconds:  # a throughput needs both sides: tokens without their time would inflate it
                hour["productive_seconds"] += row.step_seconds * (span - bad)
                hour["timed_tokens"] += gained
    if row.tflops_logged is not None and not getattr(row, "logged_implausible", False):
        hour["tflops_sum"] += row.tflops_logged
        hour["tflops_count"] += 1
    if row.loss is not None:
        hour["loss_sum"] += row.loss
        hour["loss_count"] += 1


def _row(run: TrainingRun, point: Point, facts: _Run) -> tuple[ProgressPoint | None, Problem | None]:
    if point.step_seconds is not None and point.step_seconds < 0:
        return None, Problem(point.line, _("a negative step time (%(s)s s)") % {"s": point.step_seconds})
    if point.iteration < 0:
        return None, Problem(point.line, _("a negative iteration (%(n)s)") % {"n": point.iteration})
    tokens = point.tokens
    if tokens is None and point.consumed_samples is not None and facts.sequence_length:
        tokens = point.consumed_samples * facts.sequence_length
    batch = point.global_batch_size or facts.batch
    if tokens is None and batch and facts.sequence_length:
        tokens = point.iteration * batch * facts.sequence_length
    if tokens is not None and tokens > MAX_COUNT:
        return None, Problem(point.line, _("%(n)s tokens: beyond any run") % {"n": f"{tokens:,}"})
    tokens_per_second = point.tokens_per_second
    if tokens_per_second is None and point.tokens_per_second_per_accelerator is not None and facts.accelerators:
        tokens_per_second = point.tokens_per_second_per_accelerator * facts.accelerators
    row = ProgressPoint(
        organization_id=run.organization_id,
        run=run,
        iteration=point.iteration,
        at=point.at,
        tokens=tokens,
        loss=point.loss,
        learning_rate=point.learning_rate,
        grad_norm=point.grad_norm,
        step_seconds=point.step_seconds,
        tflops_logged=point.tflops_per_accelerator,
        tokens_per_second=tokens_per_second,
        skipped=max(point.skipped_iterations, 0),
        nan=max(point.nan_iterations, 0),
    )
    if facts.peak and row.tflops_logged is not None and row.tflops_logged > facts.peak:
        row.implausible = row.logged_implausible = True  # above the accelerator's physical peak: never averaged in
    return row, None


def _rate(row: ProgressPoint, facts: _Run, span: int, tokens_before: int | None) -> None:
    """The job's tokens per second from the tokens and the step time, when the log did not print it; a rate above
    100 % MFU cannot be, and flags the point."""
    if row.tokens_per_second is None and row.step_seconds and row.tokens is not None and tokens_before is not None:
        gained = row.tokens - tokens_before
        if gained > 0 and span > 0:
            row.tokens_per_second = gained / (row.step_seconds * span)
    if row.tokens_per_second is not None and facts.accelerators and facts.peak and facts.parameters:
        mfu = 6 * facts.parameters * row.tokens_per_second / (facts.accelerators * facts.peak * 1e12)
        if mfu > 1:
            row.implausible = row.rate_implausible = True  # faster than the hardware: the step time is wrong


def _values(row: ProgressPoint) -> dict:
    return {name: getattr(row, name) for name in ("at", *POINT_FIELDS)}


def _same(kept: dict, row: ProgressPoint, timed: bool) -> bool:
    """The point kept for this iteration, sent again: the same values (and the same time, when the point carries its
    own: an iteration computed again after a restart ends later, even when its values repeat exactly)."""
    if timed and kept["at"] != row.at:
        return False
    return all(kept[name] == getattr(row, name) for name in POINT_FIELDS if name != "tokens_per_second")


def _save_points(rows: list[ProgressPoint]) -> None:
    # An iteration computed twice in one post (a restart inside the chunk) is kept as computed last: one row per
    # iteration in the upsert (PostgreSQL refuses a command that would update a row twice).
    rows = list({row.iteration: row for row in rows}.values())
    update = ["at", *POINT_FIELDS, "skipped", "nan", "implausible", "computed_again"]
    for start in range(0, len(rows), BATCH):
        ProgressPoint.objects.bulk_create(
            rows[start : start + BATCH],
            update_conflicts=True,
            unique_fields=["run", "iteration"],
            update_fields=update,
        )


def _save_hours(run: TrainingRun, hours: dict[datetime, dict]) -> None:
    if not hours:
        return
    kept = {row.hour: row for row in ProgressHour.objects.filter(run=run, hour__in=list(hours))}
    rows = []
    for hour, work in hours.items():
        row = kept.get(hour) or ProgressHour(
            organization_id=run.organization_id,
            run=run,
            hour=hour,
            hour_number=hour_number(hour),
            first_iteration=work["first"],
            last_iteration=0,
        )
        row.first_iteration = min(row.first_iteration, int(work["first"]))
        row.last_iteration = int(work["last"])
        row.tokens_end = work["tokens_end"]
        row.iterations += work["iterations"]
        row.new_tokens += int(work["new_tokens"])
        row.timed_tokens += int(work["timed_tokens"])
        row.productive_seconds += work["productive_seconds"]
        row.lost_seconds += work["lost_seconds"]
        row.skipped_seconds += work["skipped_seconds"]
        row.loss_sum += work["loss_sum"]
        row.loss_count += int(work["loss_count"])
        row.tflops_logged_sum += work["tflops_sum"]
        row.tflops_logged_count += int(work["tflops_count"])
        row.restarts += work["restarts"]
        rows.append(row)
    ProgressHour.objects.bulk_create(
        rows,
        update_conflicts=True,
        unique_fields=["run", "hour"],
        update_fields=[
            "first_iteration",
            "last_iteration",
            "tokens_end",
            "iterations",
            "new_tokens",
            "timed_tokens",
            "productive_seconds",
            "lost_seconds",
            "skipped_seconds",
            "loss_sum",
            "loss_count",
            "tflops_logged_sum",
            "tflops_logged_count",
            "restarts",
        ],
    )
