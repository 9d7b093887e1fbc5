"""Hugging Face Transformers Trainer logs: the Python dicts its callbacks print, one per logging step.

What is read (checked against transformers' trainer.py / trainer_callback.py, 4.2x to 5.x, and the public logs in
tests/samples/training/SOURCES.md):
- Training dicts `{'loss': 2.9859, 'grad_norm': 0.97, 'learning_rate': 4.17e-05, 'epoch': 0.16}`. Transformers 4.x
  prints the numbers bare, so a nan gradient norm is `'grad_norm': nan` (not valid Python: the dict is read with a
  regex, never `ast.literal_eval`); 5.x formats every float with `.4g` into a string (`'loss': '2.163'`,
  `'grad_norm': 'nan'`, `'num_tokens': '1.49e+04'`, `'epoch': '1'`). Some trainers print `tensor(nan, device=...)`
  for the gradient norm; its first argument is read. TRL's and Trainer's cumulative token counts (`num_tokens`,
  `num_input_tokens_seen`) become `Point.tokens` as printed (5.x rounds them to 4 significant digits); other keys
  ending in `loss` go to `Point.losses`.
  A printed nan loss is None and counts as a nan iteration. optimum-neuron's trainer (Trainium) prints the same
  dicts. PrinterCallback, and ProgressCallback before it printed on the world's first process only, print on each
  node's first process: a multi-node log without rank labels then repeats each dict once per node, and as no step
  number tells the copies apart, each is counted.
- The end-of-training dict (`train_runtime`, `train_loss`, ...) goes to `summary`; evaluation dicts (`eval_loss`)
  are not points.
- The `***** Running training *****` header (`Num examples`, `Num Epochs`, `Total train batch size`, `Total
  optimization steps`, printed at info level), `Continuing training from global step N` on a resume, and a
  `logging_steps` value wherever a script prints its arguments go to `settings`.
- The training progress bar (tqdm, on stderr) only for its rate (`9.69s/it` or `1.23it/s`) as the step time: its
  count is not trusted for the step, since stdout (the dicts) and stderr (the bar) reach a file out of order once
  stdout is buffered (tests/samples/training/hf_trainer_esm2_ddp_srun.log shows a bar at 18/97 after the dict of
  step 16 and before the one of step 32).

The dicts carry no step number: `Point.iteration` is, in this order,
1. the step when the dict prints one (`step`, `global_step`, ms-swift's `'global_step/max_steps': '5/2169'`);
2. `epoch × steps per epoch` when the steps per epoch are known: `options["steps_per_epoch"]`, else the header's
   `Total optimization steps / Num Epochs` (exact for a run by epochs), else `Num examples / Total train batch size`
   (for a run by max_steps), the header's figures read from the log or given back in the options under their
   settings names (a later chunk of a log has no header); rounded to a multiple of the logging interval, and always
   past the previous point unless the epoch went back (4.x rounds the epoch to 2 decimals, so two dicts can print the
   same epoch);
3. otherwise the count of training dicts × the logging interval (`options["logging_steps"]`, else the one printed in
   the log, else 1: the iteration then counts logged dicts), counted on from `Continuing training from global
   step N` when the log prints it.
An epoch that goes back is a restart (a resume from a checkpoint, or another run in the same file): the iteration
goes back with it, to the resumed step when printed, else to `epoch × steps per epoch`, with the steps per epoch
estimated as iteration / epoch of the last point when nothing better is known.
"""

from __future__ import annotations

import math
import re

from django.utils.translation import gettext as _

from workloads.training.logs.base import LineParser, Point, Problem, number, register, whole

# `'key': value` inside a printed dict: a quoted string (5.x numbers), `tensor(...)`, or a bare value up to the next
# comma (4.x numbers, nan, inf, True, None).
_PAIR = re.compile(r"'([^']+)':\s*('[^']*'|tensor\([^)]*\)|[^,}]+)")
_TENSOR = re.compile(r"tensor\(\s*([^,)\s]+)")
# A progress bar without a description (the Trainer's own), "  5%|▌   | 5/30 [00:50<04:02,  9.69s/it]" or Colab's
# "17% 5/30 [...]", for its rate only.
_BAR_RATE = re.compile(r"^\s*\d+%[| ].*?\d+/\d+ \[[^\]]*?,\s*([\d.]+)(s/it|it/s)\]")
_HEADER = re.compile(
    r"(Num examples|Num Epochs|Total train batch size \(w\. parallel, distributed & accumulation\)|"
    r"Total optimization steps|Gradient Accumulation steps|Continuing training from global step)\s*=?\s*([\d,]+)"
)
_LOGGING_STEPS = re.compile(r"logging_steps[\"']?\s*[=:]?\s*[\"']?(\d+)")
_HEADER_KEYS = {
    "Num examples": "num_examples",
    "Num Epochs": "num_epochs",
    "Total train batch size (w. parallel, distributed & accumulation)": "global_batch_size",
    "Total optimization steps": "max_steps",
    "Gradient Accumulation steps": "gradient_accumulation_steps",
}
_STEP_KEYS = ("step", "global_step")
_TOKEN_KEYS = ("num_input_tokens_seen", "num_tokens")


@register
class HFTrainerParser(LineParser):
    name = "hf_trainer"
    label = "Hugging Face Transformers Trainer"
    CARRIED = ("_iteration", "_epoch", "_resumed_at")  # from one chunk of a log to the next

    def __init__(self, options: dict | None = None) -> None:
        super().__init__(options)
        self._iteration: int | None = None  # the last point's
        self._epoch: float | None = None  # the last training dict's
        self._resumed_at: int | None = None  # "Continuing training from global step N", until a point uses it
        self._step_seconds: float | None = None  # the bar's rate since the last training dict
        self._evaluating = False  # after `***** Running Evaluation *****`, whose `Num examples` is not the training's

    @classmethod
    def matches(cls, line: str) -> bool:
        # A training dict; `'train_loss': ` and `'eval_loss': ` do not contain `'loss': ` (quote before loss).
        return "'loss': " in line and "{'" in line

    def feed(self, line: str, number_: int) -> Point | Problem | None:
        start = line.find("{'")
        if start >= 0:
            return self._dict(line, start, number_)
        if "/it]" in line or "it/s]" in line:
            self._bar(line)
        elif "***** Running " in line:
            self._evaluating = "Running training" not in line
        elif "logging_steps" in line or "Num " in line or "Total " in line or "global step" in line:
            self._setting(line)
        return None

    # -- lines that are not points -------------------------------------------------------------------------------

    def _bar(self, line: str) -> None:
        found = _BAR_RATE.match(line)
        if found:
            rate = float(found.group(1))
            if rate > 0:
                self._step_seconds = rate if found.group(2) == "s/it" else 1 / rate

    def _setting(self, line: str) -> None:
        if "logging_steps" in line:
            found = _LOGGING_STEPS.search(line)
            if found and int(found.group(1)) > 0:
                self.settings["logging_steps"] = int(found.group(1))
            return
        found = _HEADER.search(line)
        if not found:
            return
        value = int(found.group(2).replace(",", "") or 0)
        if found.group(1) == "Continuing training from global step":
            self._resumed_at = value
        elif value > 0 and not self._evaluating:
            self.settings[_HEADER_KEYS[found.group(1)]] = value

    # -- dicts ---------------------------------------------------------------------------------------------------

    def _dict(self, line: str, start: int, number_: int) -> Point | Problem | None:
        end = line.rfind("}")
        training = self.matches(line)
        if end < start:
            if training:
                return Problem(number_, _("a training dict cut off before its closing brace"))
            return None
        values = {key: text.strip() for key, text in _PAIR.findall(line[start + 1 : end])}
        if "loss" not in values:
            if "train_loss" in values or "train_runtime" in values:
                self._summary(values)
            elif training:
                return Problem(number_, _("a training dict whose loss cannot be read"))
            return None  # evaluation and other dicts
        if _value(values["loss"]) is None and not _non_finite(values["loss"]):
            return Problem(number_, _("a training dict whose loss cannot be read"))
        return self._point(values, number_)

    def _summary(self, values: dict[str, str]) -> None:
        for key, text in values.items():
            value = _value(text)
            if value is not None:
                self.summary[key] = value

    def _point(self, values: dict[str, str], number_: int) -> Point:
        epoch = _value(values.get("epoch"))
        logging_steps = self._logging_steps()
        iteration = self._iteration_of(values, epoch, logging_steps)
        loss_text = values["loss"]
        loss = _value(loss_text)
        point = Point(
            iteration=iteration,
            line=number_,
            loss=loss,
            learning_rate=_value(values.get("learning_rate") or values.get("lr")),
            grad_norm=_value(values.get("grad_norm")),
            step_seconds=self._step_seconds,
            # A printed nan or inf loss is a nan iteration; a loss the dict leaves out is not.
            nan_iterations=1 if loss is None and _non_finite(loss_text) else 0,
            iterations_in_interval=max(iteration - self._iteration, 1)
            if self._iteration is not None and iteration > self._iteration
            else logging_steps,
        )
        for key in _TOKEN_KEYS:
            tokens = _whole(values.get(key))
            if tokens is not None:
                point.tokens = tokens
                break
        # With include_num_input_tokens_seen the Trainer adds the session's average rate to each dict.
        point.tokens_per_second = _value(values.get("train_tokens_per_second"))
        for key, text in values.items():
            if key != "loss" and key.endswith("loss"):
                value = _value(text)
                if value is not None:
                    point.losses[key] = value
        self._iteration, self._epoch, self._step_seconds = iteration, epoch, None
        return point

    def _logging_steps(self) -> int:
        steps = whole(str(self.options.get("logging_steps", ""))) or self.settings.get("logging_steps") or 1
        return max(int(steps), 1)

    def _iteration_of(self, values: dict[str, str], epoch: float | None, logging_steps: int) -> int:
        for key in _STEP_KEYS:
            step = _whole(values.get(key))
            if step is not None:
                return step
        if "global_step/max_steps" in values:  # ms-swift: '5/2169'
            step = whole(values["global_step/max_steps"].strip("'\"").split("/")[0])
            if step is not None:
                return step
        went_back = epoch is not None and self._epoch is not None and epoch < self._epoch
        per_epoch = self._steps_per_epoch()
        if per_epoch and epoch is not None:
            iteration = _snap(epoch * per_epoch, logging_steps)
            if not went_back and self._iteration is not None and iteration <= self._iteration:
                iteration = self._iteration + logging_steps  # two dicts printing the same rounded epoch
            self._resumed_at = None
            return iteration
        if self._resumed_at is not None and (went_back or self._iteration is None):
            # The first dict after a resume is the next logging step after the checkpoint's.
            iteration = (self._resumed_at // logging_steps + 1) * logging_steps
            self._resumed_at = None
            return iteration
        if went_back:
            # A restart without a resumed step: the steps per epoch as seen so far put the iteration back with the
            # epoch, so that the numbering stays consistent with the points before.
            if self._epoch and self._iteration:
                return _snap(epoch * self._iteration / self._epoch, logging_steps)
            return logging_steps
        return (self._iteration or 0) + logging_steps

    def _steps_per_epoch(self) -> float | None:
        given = number(str(self.options.get("steps_per_epoch", "")))
        if given:
            return given
        # The header is printed once, at the start: a later chunk of the same log gets it back through the options.
        steps, epochs = self._setting_of("max_steps"), self._setting_of("num_epochs")
        examples, batch = self._setting_of("num_examples"), self._setting_of("global_batch_size")
        by_steps = steps / epochs if steps and epochs else None
        by_examples = examples / batch if examples and batch else None
        if by_steps and by_examples and abs(by_steps - by_examples) > 0.02 * by_examples:
            # Trained by max_steps: `Num Epochs` is max_steps / steps per epoch rounded up, so the quotient is low.
            return by_examples
        return by_steps or by_examples

    def _setting_of(self, key: str) -> float | None:
        return self.settings.get(key) or number(str(self.options.get(key, ""))) or None


def _value(text: str | None) -> float | None:
    """A printed value: a bare or quoted number, or the first argument of `tensor(...)`; nan and inf are None."""
    if text is None:
        return None
    if text.startswith("tensor("):
        found = _TENSOR.match(text)
        return number(found.group(1)) if found else None
    return number(text)


def _whole(text: str | None) -> int | None:
    value = _value(text)
    return int(round(value)) if value is not None and value >= 0 else None


def _non_finite(text: str) -> bool:
    if text.startswith("tensor("):
        found = _TENSOR.match(text)
        text = found.group(1) if found else ""
    return text.strip("'\"").lstrip("+-").lower() in ("nan", "inf", "infinity")


def _snap(iteration: float, logging_steps: int) -> int:
    """An estimated step, on the logging interval (the Trainer logs at multiples of it), and at least one interval."""
    return max(int(math.floor(iteration / logging_steps + 0.5)), 1) * logging_steps
