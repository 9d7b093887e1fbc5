"""AWS Neuron (Trainium) training logs: neuronx-distributed's example scripts, NxD Training and neuronx-nemo-megatron.

What is read (checked against aws-neuron/neuronx-distributed examples/training, aws-neuron/neuronx-distributed-training
src/neuronx_distributed_training/lightning_modules/model/base.py `log_metrics`, aws-neuron/neuronx-nemo-megatron
megatron_gpt_model.py, and the public logs in tests/samples/training/SOURCES.md):
- neuronx-distributed's tp_zero1 Llama and data-parallel BERT / GPT-NeoX scripts, and torch-neuronx's BERT tutorial:
  `LOG Tue Sep 27 20:56:35 2022 - (0, 26) step_loss : 4.3438  learning_rate : 6.66e-06  throughput : 494.55` (newer
  releases add ` seq/s` and ` grad-norm : 1.2`). The time is `time.asctime()`, local time without a zone: read as
  UTC, or in `options["timezone"]` (an IANA name).
- neuronx-distributed's tp_pp Llama script (`run_llama_nxd.py`): `step 6 step_time 458.59s throughput 2.11 seq/s
  loss 1.67 grad norm 10.125` (newer releases print `step loss`); `step_time` is the step's wall time.
- neuronx-distributed's PyTorch Lightning Llama example (`module_llama.py`): `step 10 loss is 7.12, lr is 1e-05,
  throughput 42.1 seq/s,  input_ids 123, norm 1.2, global rank 0`. No public log with this line was found: it is read
  as the source prints it.
- NxD Training and neuronx-nemo-megatron, whose Lightning progress bar prints `reduced_train_loss=13.40, lr=7.5e-9,
  parameter_norm=5536.0, global_step=1.000, consumed_samples=2048.0, throughput=0.108, throughput_peak=0.0677,
  gradient_norm=8.600` (`gradient_norm`, `parameter_norm` when enabled). The bar is redrawn several times per step:
  a line repeating the previous line's `global_step` is a redraw, not a point. Lightning prints at most about three
  significant digits when that is shorter, so a large step or sample count is as rounded as printed.
  `global_step` is the bar's value (the steps done before this one, NeMo's numbering).
optimum-neuron runs the Hugging Face Trainer: its dicts are the hf_trainer format's.

Throughput is sequences per second, kept in `Point.losses["sequences_per_second"]`; tokens/s are that × the sequence
length when `options["seq_length"]` or the log (`seq_len=512` in a printed Namespace, `--seq_len 8192`,
`seq_length: 4096` in a printed config) gives it, and the step time, when the line has none, is the global batch /
throughput when `options["global_batch_size"]` or the log (NxD Training's `global_batch_size`) gives the batch.

`matches` recognises a Lightning bar only with one of `throughput=`, `parameter_norm=`, `gradient_norm=`, which
NVIDIA's NeMo does not print: a bar with only `reduced_train_loss` (NxD Training's SFT examples show some) is NeMo's
format line for line, and is read here only when the format is named. The nemo format, before this one in the
detection order, leaves out bars with `parameter_norm=` (on by default in both Neuron libraries); a Neuron bar
without it is detected as NeMo's.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.utils.translation import gettext as _

from workloads.training.logs.base import LineParser, Point, Problem, number, register, whole

_LOG = re.compile(
    r"LOG (\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4}) - \((\d+), (\d+)\) step_loss : (\S+)\s+learning_rate : (\S+)\s+"
    r"throughput : ([^\s,]+)(?: seq/s)?(?:\s+grad-norm : (tensor\([^)]*\)|\S+))?"
)
_TP_PP = re.compile(
    r"step (\d+) step_time ([\d.eE+-]+)s throughput (\S+) seq/s (?:step )?loss (\S+) grad norm (tensor\([^)]*\)|\S+)"
)
_PTL = re.compile(
    r"step (\d+) loss is ([^,]+), lr is ([^,]+), throughput (\S+) seq/s,\s+input_ids \S+, norm (.+?), global rank"
)
_BAR_VALUE = re.compile(r"(\w+)=([^,\]\s]+)")
_GLOBAL_STEP = re.compile(r"\bglobal_step=([^,\]\s]+)")
_TENSOR = re.compile(r"tensor\(\s*([^,)\s]+)")
# `seq_len=512` (a printed Namespace), `--seq_len 8192`, `seq_length: 4096` (NxD Training's printed config) and its
# `global_batch_size`; not neuronx-distributed's `train_batch_size`, which is per data-parallel rank.
_SETTING = re.compile(r"(?<![\w-])(?:--)?(seq_len|seq_length|global_batch_size)\b[\s=:\"']*(\d+)")
_SETTING_NAMES = {"seq_len": "seq_length", "seq_length": "seq_length", "global_batch_size": "global_batch_size"}
_NEURON_BAR_KEYS = ("throughput=", "parameter_norm=", "gradient_norm=")
_MONTHS = {"Jan": 1, "Feb": 2, "Mar": 3, "Apr": 4, "May": 5, "Jun": 6, "Jul": 7, "Aug": 8, "Sep": 9, "Oct": 10}
_MONTHS |= {"Nov": 11, "Dec": 12}


@register
class NeuronParser(LineParser):
    name = "neuron"
    label = "AWS Neuron (neuronx-distributed, NxD Training, neuronx-nemo-megatron)"
    CARRIED = ("_last",)  # from one chunk of a log to the next

    def __init__(self, options: dict | None = None) -> None:
        super().__init__(options)
        self._last: int | None = None  # the last point's iteration, for the Lightning bar's redraws
        self._zone = _zone(self.options)

    @classmethod
    def matches(cls, line: str) -> bool:
        if line.startswith("LOG "):
            return "step_loss :" in line
        if line.startswith("step "):
            return " step_time " in line or " loss is " in line
        return "reduced_train_loss=" in line and any(key in line for key in _NEURON_BAR_KEYS)

    def feed(self, line: str, number_: int) -> Point | Problem | None:
        if line.startswith("LOG ") and "step_loss :" in line:
            point = self._log(line, number_)
        elif line.startswith("step ") and " step_time " in line:
            point = self._tp_pp(line, number_)
        elif line.startswith("step ") and " loss is " in line:
            point = self._ptl(line, number_)
        elif "reduced_train_loss=" in line:
            point = self._bar(line, number_)
        else:
            if "seq_len" in line or "batch_size" in line:
                for name, value in _SETTING.findall(line):
                    if int(value) > 0:
                        self.settings.setdefault(_SETTING_NAMES[name], int(value))
            return None
        if isinstance(point, Point):
            self._last = point.iteration
        return point

    def _log(self, line: str, number_: int) -> Point | Problem:
        found = _LOG.match(line)
        if not found:
            return Problem(number_, _("a Neuron LOG line cut off before its throughput"))
        point = Point(
            iteration=int(found.group(3)),
            line=number_,
            at=self._time(found.group(1)),
            learning_rate=number(found.group(5)),
            grad_norm=_value(found.group(7)),
        )
        self._loss(point, found.group(4))
        self._throughput(point, number(found.group(6)))
        return point

    def _tp_pp(self, line: str, number_: int) -> Point | Problem:
        found = _TP_PP.match(line)
        if not found:
            return Problem(number_, _("a Neuron step line cut off before its gradient norm"))
        point = Point(
            iteration=int(found.group(1)),
            line=number_,
            step_seconds=number(found.group(2)),
            grad_norm=_value(found.group(5)),
        )
        self._loss(point, found.group(4))
        self._throughput(point, number(found.group(3)))
        return point

    def _ptl(self, line: str, number_: int) -> Point | Problem:
        found = _PTL.match(line)
        if not found:
            return Problem(number_, _("a Neuron step line cut off before its global rank"))
        point = Point(
            iteration=int(found.group(1)),
            line=number_,
            learning_rate=number(found.group(3)),
            grad_norm=_value(found.group(5).strip()),
        )
        self._loss(point, found.group(2))
        self._throughput(point, number(found.group(4)))
        return point

    def _bar(self, line: str, number_: int) -> Point | Problem | None:
        step = _GLOBAL_STEP.search(line)
        iteration = whole(step.group(1)) if step else None
        if iteration is None:
            if step is None and not line.endswith("]"):
                return Problem(number_, _("a progress bar cut off before its global_step"))
            return Problem(number_, _("a progress bar whose global_step cannot be read"))
        if iteration == self._last:
            return None  # the bar redrawn within the same step: not read further
        values = dict(_BAR_VALUE.findall(line))
        point = Point(
            iteration=iteration,
            line=number_,
            consumed_samples=whole(values.get("consumed_samples")),
            learning_rate=number(values.get("lr")),
            grad_norm=number(values.get("gradient_norm")),
        )
        self._loss(point, values.get("reduced_train_loss"))
        self._throughput(point, number(values.get("throughput")))
        return point

    def _loss(self, point: Point, text: str | None) -> None:
        point.loss = number(text)
        if point.loss is None and text is not None and text.strip(",").lstrip("+-").lower() in ("nan", "inf"):
            point.nan_iterations = 1

    def _throughput(self, point: Point, sequences_per_second: float | None) -> None:
        if not sequences_per_second:
            return
        point.losses["sequences_per_second"] = sequences_per_second
        seq_length = whole(str(self.options.get("seq_length", ""))) or self.settings.get("seq_length")
        if seq_length:
            point.tokens_per_second = sequences_per_second * seq_length
        batch = whole(str(self.options.get("global_batch_size", ""))) or self.settings.get("global_batch_size")
        if point.step_seconds is None and batch:
            point.step_seconds = batch / sequences_per_second

    def _time(self, text: str) -> datetime | None:
        """`time.asctime()`'s `Tue Sep 27 20:56:35 2022`, read from its parts (strptime costs more than the line)."""
        try:
            _weekday, month, day, clock, year = text.split()
            hour, minute, second = clock.split(":")
            return datetime(int(year), _MONTHS[month], int(day), int(hour), int(minute), int(second), tzinfo=self._zone)
        except (KeyError, ValueError):
            return None


def _value(text: str | None) -> float | None:
    """A printed number, or the first argument of a printed `tensor(...)`; nan, inf and `None` are None."""
    if text is None:
        return None
    if text.startswith("tensor("):
        found = _TENSOR.match(text)
        return number(found.group(1)) if found else None
    return number(text)


def _zone(options: dict) -> tzinfo:
    """The zone the log's local times are in: the poster's, else UTC (the default of cloud images)."""
    try:
        return ZoneInfo(str(options["timezone"])) if options.get("timezone") else UTC
    except (ZoneInfoNotFoundError, ValueError):
        return UTC
