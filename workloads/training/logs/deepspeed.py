"""DeepSpeed's own progress lines: the pipeline engine's `steps:` line and the engine's `step=` and timer lines.

What is read (checked against deepspeedai/DeepSpeed deepspeed/runtime/pipe/engine.py `train_batch`,
runtime/engine.py `_report_progress`, utils/timer.py `ThroughputTimer.stop`, DeepSpeed 0.3 to 0.19, and the public logs
in tests/samples/training/SOURCES.md):
- `steps: 30 loss: 10.7133 iter time (s): 0.283 samples/sec: 226.457`, printed every `steps_per_print` steps by the
  pipeline engine (DeepSpeedExamples' pipeline example, GPT-NeoX, Megatron-DeepSpeed with pipeline parallelism,
  diffusion-pipe); extra losses a model reports (`lm loss: 5.51 moe loss: 0.04`) go to `Point.losses`. This is the
  line `matches` recognises: it is the only DeepSpeed line with a loss.
- `[2023-04-18 01:46:59,142] [INFO] [logging.py:96:log_dist] [Rank 0] step=10, skipped=6, lr=[9.65e-06, ...],
  mom=[...]`: the step, the learning rate of the first parameter group, the log line's time, and the skipped-step
  counter (cumulative: a point gets the steps skipped since the previous `step=` line; the first one in a text gets
  the counter itself, at most its step, as if the text started with the job).
- The throughput timer `epoch=0/micro_step=10/global_step=10, RunningAvgSamplesPerSec=173.4, CurrSamplesPerSec=
  171.97, MemAllocated=...` (DeepSpeed ≥ 0.7; older `0/40, SamplesPerSec=83.48, ...`): the current samples/s, which
  with the global batch gives the step time.
- fp16 loss-scale overflows (`OVERFLOW! Rank 0 Skipping step.`, `Overflow detected. Skipping step.`): counted as the
  skipped steps of a point that has no `step=` line to give the counter.
The lines of one step complete one point (the engine prints `step=N` and the timer before or after `steps: N`).
Samples/s are kept in `Point.losses["samples_per_second"]`; tokens/s are samples/s × the sequence length when
`options["seq_length"]` or the log (`--max_seq_len`, `--seq-length`, Megatron's `seq_length ....`) gives it.
DeepSpeed prints local time without a zone: it is read as UTC, or in `options["timezone"]` (an IANA name).

The engine and timer lines are not what `matches` recognises: a Hugging Face Trainer run on DeepSpeed prints them
too, and the hf_trainer format comes after this one in the detection order, so claiming them would take its logs
(Megatron-DeepSpeed's come before, and are Megatron's whatever this format claims). A log with only engine lines
(DeepSpeed-Chat) is read when the format is named (`parse_log(text, format="deepspeed")`). Since DeepSpeed 0.15.2
`steps_per_print` defaults to None and none of these lines is printed unless a config sets it.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.utils.translation import gettext as _

from workloads.training.logs.base import LineParser, Point, Problem, number, register, whole

_STEPS_START = re.compile(r"\s*steps: \d+ loss: ")
_STEPS = re.compile(r"\s*steps: (\d+) loss: (\S+) (.*?)iter time \(s\): ([^\s,]+)(?: samples/sec: ([^\s,]+))?")
_ENGINE = re.compile(r"\[Rank 0\] step=(\d+), skipped=(\d+), lr=\[([^\],]*)")
_TIMER = re.compile(r"global_step=(\d+), RunningAvgSamplesPerSec=[^,]+, CurrSamplesPerSec=([^,]+)")
_TIMER_OLD = re.compile(r"\] \d+/(\d+), SamplesPerSec=([^,]+)")
_TIME = re.compile(r"\[(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d),(\d{3})\]")
# DeepSpeed's config print (`train_batch_size ............. 32`), a JSON config, Megatron's argument dump and command
# lines (`--seq-length 2048`, DeepSpeed-Chat's `--max_seq_len 512`); not `per_device_train_batch_size` nor
# `encoder_seq_length`.
_SETTING = re.compile(
    r"(?<![\w-])(?:--)?(train_batch_size|global[_-]batch[_-]size|steps_per_print|max_seq_len|seq[_-]length|seq_len)"
    r"\b[\s.=:\"']*?(\d+)"
)
_SETTING_NAMES = {
    "train_batch_size": "global_batch_size",
    "global_batch_size": "global_batch_size",
    "global-batch-size": "global_batch_size",
    "steps_per_print": "steps_per_print",
    "max_seq_len": "seq_length",
    "seq_length": "seq_length",
    "seq-length": "seq_length",
    "seq_len": "seq_length",
}


@register
class DeepSpeedParser(LineParser):
    name = "deepspeed"
    label = "DeepSpeed"
    CARRIED = ("_skipped",)  # from one chunk of a log to the next

    def __init__(self, options: dict | None = None) -> None:
        super().__init__(options)
        self._last: Point | None = None  # the point the next lines of the same step complete
        self._skipped: int | None = None  # the engine's cumulative counter, as last printed
        self._overflows = 0  # overflow lines since the last point
        self._zone = _zone(self.options)

    @classmethod
    def matches(cls, line: str) -> bool:
        return "steps: " in line and _STEPS_START.match(line) is not None

    def feed(self, line: str, number_: int) -> Point | Problem | None:
        if "steps: " in line and _STEPS_START.match(line):
            return self._steps(line, number_)
        if "] step=" in line:
            found = _ENGINE.search(line)
            return self._engine(found, line, number_) if found else None
        if "SamplesPerSec=" in line:
            return self._timer(line, number_)
        if "OVERFLOW!" in line or "Overflow detected" in line:
            self._overflows += 1
        elif "_size" in line or "-size" in line or "seq_len" in line or "steps_per_print" in line:
            for name, value in _SETTING.findall(line):
                if int(value) > 0:
                    self.settings.setdefault(_SETTING_NAMES[name], int(value))
        return None

    def _point(self, iteration: int, number_: int) -> tuple[Point, bool]:
        """The point of this step: the last one when the step is the same (a line completing it), else a new one.

        The engine, timer and `steps:` lines of one step are one point: the first returns it, the others fill it in
        and return None. parse_log keeps the very object returned, so what they add is in the result."""
        if self._last is not None and self._last.iteration == iteration:
            return self._last, False
        point = Point(iteration=iteration, line=number_, skipped_iterations=self._overflows)
        self._overflows = 0
        self._last = point
        return point, True

    def _steps(self, line: str, number_: int) -> Point | Problem | None:
        found = _STEPS.match(line)
        if not found:
            return Problem(number_, _("a DeepSpeed steps line cut off before its iteration time"))
        point, new = self._point(int(found.group(1)), number_)
        loss_text = found.group(2)
        point.loss = number(loss_text)
        point.nan_iterations = 1 if point.loss is None and loss_text.lower().lstrip("+-") in ("nan", "inf") else 0
        point.step_seconds = number(found.group(4))
        for name, value in _extra_losses(found.group(3)):
            value = number(value)
            if value is not None:
                point.losses[name] = value
        self._rate(point, number(found.group(5)))
        return point if new else None

    def _engine(self, found: re.Match, line: str, number_: int) -> Point | None:
        iteration, counter = int(found.group(1)), int(found.group(2))
        point, new = self._point(iteration, number_)
        point.learning_rate = number(found.group(3))
        if point.at is None:
            point.at = self._time(line)
        if self._skipped is None:
            point.skipped_iterations = min(counter, iteration)
        else:
            # A counter that went down is a job restored from an older checkpoint: nothing known was skipped.
            point.skipped_iterations = max(counter - self._skipped, 0)
        self._skipped = counter
        return point if new else None

    def _timer(self, line: str, number_: int) -> Point | None:
        found = _TIMER.search(line) or _TIMER_OLD.search(line)
        if not found:
            return None
        point, new = self._point(int(found.group(1)), number_)
        samples_per_second = number(found.group(2))
        self._rate(point, samples_per_second)
        batch = whole(str(self.options.get("global_batch_size", ""))) or self.settings.get("global_batch_size")
        if point.step_seconds is None and batch and samples_per_second:
            # The timer divides the global batch by the step's time.
            point.step_seconds = batch / samples_per_second
        if point.at is None:
            point.at = self._time(line)
        return point if new else None

    def _rate(self, point: Point, samples_per_second: float | None) -> None:
        if samples_per_second is None:
            return
        point.losses.setdefault("samples_per_second", samples_per_second)
        seq_length = whole(str(self.options.get("seq_length", ""))) or self.settings.get("seq_length")
        if point.tokens_per_second is None and seq_length:
            point.tokens_per_second = samples_per_second * seq_length

    def _time(self, line: str) -> datetime | None:
        found = _TIME.match(line)
        if not found:
            return None
        # Built from the digits: strptime would cost more than the rest of the line.
        year, month, day, hour, minute, second, millisecond = map(int, found.groups())
        try:
            return datetime(year, month, day, hour, minute, second, millisecond * 1000, tzinfo=self._zone)
        except ValueError:
            return None


def _extra_losses(text: str) -> list[tuple[str, str]]:
    """`moe loss: 0.01 lm loss: 2.3` as (name, value) pairs, word by word (a regular expression with a lazy name
    before each colon took quadratic time on a long line)."""
    pairs, name = [], []
    words = text.split()
    index = 0
    while index < len(words):
        word = words[index]
        if word.endswith(":") and index + 1 < len(words):
            pairs.append((" ".join([*name, word[:-1]]), words[index + 1]))
            name, index = [], index + 2
            continue
        name.append(word)
        index += 1
    return pairs


def _zone(options: dict) -> tzinfo:
    """The zone the log's local times are in: the poster's, else UTC (the default of cloud images)."""
    try:
        return ZoneInfo(str(options["timezone"])) if options.get("timezone") else UTC
    except (ZoneInfoNotFoundError, ValueError):
        return UTC
