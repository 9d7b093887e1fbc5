"""NeMo 2 (and NeMo 1) training logs read through PyTorch Lightning's progress output: one point per printed step.

Two shapes of the same metrics (`reduced_train_loss`, `global_step`, `consumed_samples`, `train_step_timing in s`,
`lr`, `TFLOPS_per_GPU`, ...), as `self.log(..., prog_bar=True)` hands them to the progress bar:

1. NeMo 2's `ProgressPrinter` (nemo/lightning/pytorch/callbacks/progress_printer.py, used by MegatronStrategy in
   place of Lightning's bar, so the default of `llm.pretrain`/`llm.finetune`, NeMo-Run and BioNeMo 2), one line per
   step or per `log_interval` steps:

       Training epoch 0, iteration 45/99 | lr: 6.897e-06 | global_batch_size: 128 | global_step: 45 |
       reduced_train_loss: 11.96 | train_step_timing in s: 6.08 | TFLOPS_per_GPU: 1.249e+03 | consumed_samples: 5888

   A whole float is printed as an int, any other value as `{:.4}` (so `nan` stays `nan`). Every value but
   `global_step` is the mean over the printer's `log_interval` (1 by default), `consumed_samples` included.
2. Lightning's tqdm bar (`TQDMProgressBar`, NeMo's `MegatronProgressBar`, NeMo 1 and BioNeMo 1), rewritten in place
   with `\\r`:

       Epoch 0: : 100%|██████████| 50/50 [23:22<00:00, reduced_train_loss=0.186, global_step=49.00,
       consumed_samples=51200.0, train_step_timing in s=24.00]

   tqdm prints each number with 3 significant digits (`{:.3g}`) when that is shorter, which Lightning pads to 5
   characters: `global_step=2e+3` is any step from about 1995 to 2005, `consumed_samples=2.54e+8` is rounded, a nan loss
   reads `nan.0`.

Checked against NVIDIA/NeMo's source (progress_printer.py, progress_bar.py, megatron_strategy.py's `global_step`
and `reduced_train_loss`, flops_callback.py's `TFLOPS_per_GPU`, exp_manager.py's `train_step_timing in s` and
`tokens_per_sec_per_gpu`), Lightning's `Tqdm.format_num`, and the real logs in tests/samples/training/ (SOURCES.md):
BioNeMo 2's Evo2 fine-tuning and ESM-2 pretraining (ANSI colours, Slurm `0: ` labels), NeMo 2's resiliency demo on
NeMo-Run (a crash and an in-job restart, lines behind NeMo-Run's `name/0 [default0]:` prefix), a NeMo 2 performance
run with `TFLOPS_per_GPU`, and NeMo 1 / BioNeMo 1 tqdm bars.

Choices:
- The iteration is the printed `global_step`: Lightning's `trainer.global_step`, the optimizer steps done before
  this one, so the first step is 0 (NeMo 2's `consumed_samples` then counts this step's samples: (step + 1) × global
  batch size; NeMo 1's counts the steps before it). The printer's `iteration k/N` is the step within the epoch and
  restarts at 0 each epoch, so it is not used.
- In a file a bar's line holds every rewrite of the bar since the last newline, `\\r`-separated. parse_log's
  `str.splitlines()` already splits at `\\r`, so there each redraw arrives as a line of its own and gives its point
  (a redraw repeating the previous one's step and values is dropped as a copy). A line that still holds several
  redraws (a caller splitting at `\\n` only) gives its last complete redraw: one answer a line is the contract, the
  last redraw is the newest, and the bar redraws its postfix only every few steps anyway.
- A `global_step` the bar prints rounded (`2e+3`; every step from 100000 on) is taken from the bar's count instead
  (n − 1 with MegatronProgressBar, whose count is the global step + 1, though it can run a step or two ahead of the
  postfix) when that count rounds to the printed value; otherwise (Lightning's own bar counts micro-batches) the line
  is a problem: a guessed step would put the point at the wrong place. A rounded `consumed_samples` is left out
  (None), not guessed.
- When the poster says the printer's interval (`log_interval` option) is more than 1, `consumed_samples` is left out:
  the printer prints the mean over the interval, not the count at the step.
- AWS Neuron's Lightning trainers (neuronx-nemo-megatron, NeuronX Distributed Training) print the same tqdm bar with
  `parameter_norm=`, `gradient_norm=`, `throughput=` or `iteration_time=`: those bars are left to the neuron format.
- Settings: `world_size` from Lightning's `Starting with N processes`, `global_batch_size` from the first progress
  line, `seq_length` from NeMo 1's Hydra config dump (`  encoder_seq_length: 2048`); NeMo 2 prints none of its recipe.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from django.utils.translation import gettext as _

from workloads.training.logs.base import LineParser, Point, Problem, number, register, whole

# NeMo 2's ProgressPrinter: `Training epoch 0, iteration 17/99 | ...`.
_PRINTER = re.compile(r"Training epoch \d+, iteration \d+/\d+")
# One tqdm redraw: `Epoch 0: ... 50/50 [23:22<00:00, key=value, ...]` (or `1it [...]` when the total is unknown);
# the postfix must be closed by `]`, so a redraw cut by the next `\r` or by the end of the file does not match.
_BAR = re.compile(r"Epoch \d+:[^\[\r]*?(\d+)(?:/\S+|it) \[([^\[\]\r]*reduced_train_loss=[^\[\]\r]*)\]")
_BAR_START = re.compile(r"Epoch \d+:")
# A timestamp a launcher or `ts` may put before the printer's line: `[2025-10-17T11:32:59+08:00] Training epoch`.
_STAMP = re.compile(r"(\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?)(Z|[+-]\d\d:?\d\d)?")
_WORLD = re.compile(r"All distributed processes registered\. Starting with (\d+) processes")
_SEQ_LENGTH = re.compile(r"^\s*(?:encoder_)?seq_length: (\d+)\s*$")  # NeMo 1's Hydra config dump
# AWS Neuron's Lightning-based trainers print the same tqdm bar with fields of their own: `parameter_norm=`,
# `gradient_norm=`, `iteration_time=` (neuronx-nemo-megatron), `throughput=` (NeuronX Distributed Training). Those bars
# are the neuron format's (the same keys as neuron.py's), which comes after this one in the detection order.
_NEURON_MARKS = ("parameter_norm=", "gradient_norm=", "throughput=", "iteration_time=")


def _neuron(line: str) -> bool:
    return any(mark in line for mark in _NEURON_MARKS)


def _nan(text: str | None) -> bool:
    """A printed nan loss: `nan` from the printer, `nan.0` from Lightning's padded tqdm numbers."""
    return text is not None and text.lstrip("+-")[:3].lower() == "nan"


def _exact(text: str | None) -> int | None:
    """A count printed in full (`5888`, `9984.0`); None when tqdm rounded it to 3 significant digits (`2.54e+8`)."""
    if text is None or "e" in text or "E" in text:
        return None
    return whole(text)


def _excerpt(line: str) -> str:
    text = line.strip()
    return text if len(text) <= 80 else text[:80] + "…"


@register
class NemoParser(LineParser):
    name = "nemo"
    label = "NeMo 2 / PyTorch Lightning"

    @classmethod
    def matches(cls, line: str) -> bool:
        if "Training epoch " in line:
            return _PRINTER.search(line) is not None
        return "reduced_train_loss=" in line and not _neuron(line) and _BAR_START.search(line) is not None

    def feed(self, line: str, number_: int) -> Point | Problem | None:
        if "Training epoch " in line:
            head = _PRINTER.search(line)
            if head is not None:
                return self._printer(line, head, number_)
        elif "reduced_train_loss=" in line:
            if not _neuron(line):
                return self._bar(line, number_)
        elif "Starting with " in line:
            found = _WORLD.search(line)
            if found is not None:
                self.settings.setdefault("world_size", int(found.group(1)))
        elif "seq_length: " in line:
            found = _SEQ_LENGTH.match(line)
            if found is not None:
                self.settings.setdefault("seq_length", int(found.group(1)))
        return None

    # --- NeMo 2's ProgressPrinter ---------------------------------------------------------------------------------

    def _printer(self, line: str, head: re.Match[str], number_: int) -> Point | Problem:
        fields: dict[str, str] = {}
        # `| key: value` pairs; a piece without `: ` is a key cut by the end of the line, and is dropped.
        key = ""
        for piece in line[head.end() :].split(" | "):
            key, colon, value = piece.partition(": ")
            if colon:
                fields[key.strip()] = value.strip()
        step = fields.get("global_step")
        iteration = whole(step)
        if iteration is None or key.strip() == "global_step":
            # Cut before `global_step`, or a module that does not log it: the step the values belong to is unknown.
            # `global_step` is never the last value (MegatronStrategy logs the loss after it): last, it was cut.
            return Problem(
                number_,
                _("a NeMo progress line without a readable global_step (cut or garbled): %(text)s")
                % {"text": _excerpt(line)},
            )
        interval = self._interval()
        point = Point(iteration=iteration, line=number_, iterations_in_interval=interval)
        get = fields.get
        loss = get("reduced_train_loss")
        point.loss = number(loss)
        if _nan(loss):
            point.nan_iterations = 1  # a mean over the interval is nan when one step of it was: at least one
        point.learning_rate = number(get("lr"))
        point.global_batch_size = whole(get("global_batch_size"))
        if interval == 1:
            point.consumed_samples = whole(get("consumed_samples"))
        point.step_seconds = number(get("train_step_timing in s"))
        point.tflops_per_accelerator = number(get("TFLOPS_per_GPU") or get("tflops_per_sec_per_gpu"))
        point.tokens_per_second_per_accelerator = number(get("tokens_per_sec_per_gpu"))
        point.grad_norm = number(get("grad_norm"))
        if point.global_batch_size is not None:
            self.settings.setdefault("global_batch_size", point.global_batch_size)
        if head.start() > 0:
            point.at = _at(line[: head.start()])
        return point

    def _interval(self) -> int:
        """How many steps a printed line averages: the printer's `log_interval`, which no log line shows, so only the
        poster can say it; a gap between two printed steps may be lines cut from a pasted excerpt."""
        interval = self.options.get("log_interval") or self.options.get("logging_steps")
        try:
            return max(1, int(interval)) if interval else 1
        except (TypeError, ValueError):
            return 1

    # --- Lightning's tqdm bar -------------------------------------------------------------------------------------

    def _bar(self, line: str, number_: int) -> Point | Problem | None:
        found = None
        for redraw in reversed(line.split("\r")):
            found = _BAR.search(redraw)
            if found is not None:
                break
        if found is None:
            if not _BAR_START.search(line):
                return None  # `reduced_train_loss=` in a checkpoint name or a warning, not a bar
            return Problem(
                number_,
                _("a NeMo progress bar cut before the end of its values: %(text)s") % {"text": _excerpt(line)},
            )
        count_text, postfix = found.groups()
        fields: dict[str, str] = {}
        for item in postfix.split(", "):
            key, equals, value = item.partition("=")
            if equals:
                fields[key.strip()] = value.strip()
        get = fields.get
        step = get("global_step")
        if step is None:
            return Problem(number_, _("a NeMo progress bar without global_step: %(text)s") % {"text": _excerpt(line)})
        iteration = _exact(step)
        if iteration is None:
            iteration = self._rounded_step(step, int(count_text))
            if iteration is None:
                return Problem(
                    number_,
                    _(
                        "a NeMo progress bar prints global_step rounded (%(step)s) and its count does not say which "
                        "step it is, so the line is left out"
                    )
                    % {"step": step},
                )
        point = Point(iteration=iteration, line=number_)
        loss = get("reduced_train_loss")
        point.loss = number(loss)
        if _nan(loss):
            point.nan_iterations = 1
        point.consumed_samples = _exact(get("consumed_samples"))
        point.step_seconds = number(get("train_step_timing in s"))
        point.learning_rate = number(get("lr"))
        point.tflops_per_accelerator = number(get("TFLOPS_per_GPU"))
        point.tokens_per_second_per_accelerator = number(get("tokens_per_sec_per_gpu"))
        return point

    @staticmethod
    def _rounded_step(printed: str, count: int) -> int | None:
        """The step of a bar whose `global_step` tqdm rounded: MegatronProgressBar counts global steps, so its count
        is the global step + 1; it is used only when it rounds to what was printed (Lightning's own bar counts
        micro-batches and will not)."""
        value = number(printed)
        candidate = count - 1
        if value is None or candidate < 0:
            return None
        return candidate if float(f"{candidate:.3g}") == value else None


def _at(prefix: str) -> datetime | None:
    found = _STAMP.search(prefix)
    if found is None:
        return None
    stamp, zone = found.groups()
    try:
        at = datetime.fromisoformat(stamp.replace(",", ".") + (zone or ""))
    except ValueError:
        return None
    # A stamp without a zone is the node's clock, taken as UTC.
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)
