"""Megatron-LM, Megatron-Core and Megatron-DeepSpeed training logs: one point per iteration line.

Every Megatron derivative prints one `|`-separated line per logging interval, from `training_log()` in
megatron/training/training.py (megatron/training.py before 2024):

    [2024-04-06 03:02:12] iteration       71/     100 | consumed samples:         9088 | elapsed time per
    iteration (ms): 5361.6 | throughput per GPU (TFLOP/s/GPU): 243.6 | learning rate: 1.420000E-05 | global batch
    size:   128 | lm loss: 1.818812E+00 | load_balancing_loss: 1.013377E+00 | loss scale: 1.0 | grad norm: 1.300 |
    num zeros: 0.0 | number of skipped iterations:   0 | number of nan iterations:   0 |

What is read, and the variants it was checked against (source code, and the real logs in tests/samples/training/,
whose origins SOURCES.md gives):
- Megatron-LM 2019-2023 (NVIDIA/Megatron-LM history; BigScience's 2021 GPT-2 runs on Jean Zay): no timestamp,
  no throughput; `learning rate` as `{:.3E}`.
- Megatron-LM / Megatron-Core since January 2024: a `[%Y-%m-%d %H:%M:%S]` timestamp before `iteration` (with
  `.%f` microseconds since 2026), `throughput per GPU (TFLOP/s/GPU)` with --log-throughput, MoE and MTP losses
  (`load_balancing_loss`, `z_loss`, `mtp_1 loss`, ...), `skipped samples`, `energy per GPU`: NVIDIA/Megatron-LM
  issue #756 (Mixtral 8x7B, H100), inclusionAI/Ling-V2 (Ling-mini-2.0 MoE on Megatron-Core 0.13).
- Megatron-DeepSpeed (microsoft/ and bigscience-workshop/): `consumed tokens`, elapsed time in ms or, in
  BigScience's fork, in seconds (`elapsed time per iteration (s)`), `samples per second`, `tokens per gpu per second
  (tgs)`, `TFLOPs`, `moe loss`, `actual seqlen`, and the early `lm-loss` spelling: BLOOM-176B's chronicles,
  a 4×V100 MoE run's logs.
- GPT-NeoX prints the same line (`lm_loss`, `samples/sec` first) and is read by the same rules.

The timestamp is the node's local time without a zone (datetime.now()); it is taken as UTC. A field is read only
when its closing `|` is there, so a line cut mid-value keeps what came before the cut and loses nothing else. Lines
between iteration lines (validation `lm loss value`, checkpoint saves, `(min, max) time across ranks` timers, memory
reports) are not points; the argument dump at the start (`  seq_length ........ 4096`) fills `settings`.

Megatron does not print a nan loss: the field is left out and `number of nan iterations` counts it. A loss printed
`nan` anyway (forks) is None, never zero.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime

from django.utils.translation import gettext as _

from workloads.training.logs import base
from workloads.training.logs.base import LineParser, Point, Problem, register

# `[timestamp] iteration N/ TOTAL |`, searched (not matched) so that whatever stands before it (a launcher's
# prefix, GPT-NeoX's `samples/sec` field, another rank's print run into the line) does not hide the iteration.
_HEAD = re.compile(
    r"(?:\[(\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?)(Z|[+-]\d\d:?\d\d)?\]\s*)?"
    r"\biteration\s+(\d+)\s*/\s*(\d+)\s*\|"
)
# A line of the argument dump Megatron prints at start-up: two spaces, the name, dots, the value.
_ARGUMENT = re.compile(r"\s*([a-z][a-z0-9_]*) \.{2,} (\S.*)$")
# What the ingest uses of the run's arguments (all whole numbers).
_SETTINGS = frozenset(
    {"seq_length", "global_batch_size", "micro_batch_size", "world_size", "train_iters", "log_interval"}
)
# The fields read, by the name each variant prints, to a slot of the line's raw values: one dict lookup per field.
_CONSUMED, _TOKENS, _BATCH, _LR, _GRAD, _MS, _S, _TFLOPS, _TFLOPS_DS, _TGS, _SKIPPED, _NAN, _LOSS = range(13)
_SLOTS = {
    "consumed samples": _CONSUMED,
    "consumed tokens": _TOKENS,  # Megatron-DeepSpeed
    "global batch size": _BATCH,
    "learning rate": _LR,
    "grad norm": _GRAD,
    "elapsed time per iteration (ms)": _MS,
    "elapsed time per iteration (s)": _S,  # BigScience's Megatron-DeepSpeed
    "throughput per GPU (TFLOP/s/GPU)": _TFLOPS,
    "TFLOPs": _TFLOPS_DS,  # Megatron-DeepSpeed
    "tokens per gpu per second (tgs)": _TGS,  # microsoft/Megatron-DeepSpeed
    "number of skipped iterations": _SKIPPED,
    "number of nan iterations": _NAN,
    "lm loss": _LOSS,
    "lm-loss": _LOSS,  # early Megatron-DeepSpeed
    "lm_loss": _LOSS,  # GPT-NeoX
}
_MARK = "elapsed time per iteration"


def _fields(line: str, start: int) -> list[tuple[str, str]]:
    """The `key: value |` fields after `start`, split (a regular expression over the rest of the line took quadratic
    time on a long line without `|`). The text after the last `|` is no field: a line cut in the middle of a field
    never reads its value cut short as a shorter number."""
    fields = []
    for part in line[start:].split("|")[:-1]:
        key, colon, text = part.partition(":")
        if colon:
            fields.append((key.strip(), text.strip()))
    return fields


def _value(text: str | None) -> float | None:
    """base.number's reading, faster: float() takes Megatron's printed numbers (`1.818812E+00`, `  128 `) as they
    are; anything float() refuses, and the underscores float() would accept, go through base.number."""
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        return base.number(text)
    if "_" in text:
        return base.number(text)
    return value if math.isfinite(value) else None


def _count(text: str | None) -> int | None:
    """A printed whole number (samples, tokens, counters): int() for the common case, base.whole otherwise."""
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        return base.whole(text)


@register
class MegatronParser(LineParser):
    name = "megatron"
    label = "Megatron-LM / Megatron-Core / Megatron-DeepSpeed"
    CARRIED = ("_previous",)  # from one chunk of a log to the next

    def __init__(self, options: dict | None = None) -> None:
        super().__init__(options)
        self._previous: int | None = None  # the last point's iteration, for the iterations a line sums

    @classmethod
    def matches(cls, line: str) -> bool:
        # Validation, checkpoint and timer lines name an iteration too, but only the progress line has this mark.
        return _MARK in line and " iteration " in line and "/" in line

    def feed(self, line: str, number: int) -> Point | Problem | None:
        if _MARK not in line:
            if " .." in line:
                self._argument(line)
            return None
        head = _HEAD.search(line)
        if head is None:
            if not self.matches(line):
                return None
            text = line.strip()
            if len(text) > 80:
                text = text[:80] + "…"
            return Problem(
                number,
                _("a Megatron iteration line whose iteration number cannot be read (cut or garbled): %(text)s")
                % {"text": text},
            )
        raw: list[str | None] = [None] * 13
        losses: dict[str, float] = {}
        slot_of = _SLOTS.get
        for key, text in _fields(line, head.end()):
            slot = slot_of(key)
            if slot is not None:
                if raw[slot] is not None:
                    # The same field twice: two iteration lines written into one line, their values mixed.
                    return Problem(number, _("two Megatron iteration lines run together in one line"))
                raw[slot] = text
            elif key[-4:] == "loss":  # MoE, MTP, BERT's sop, Megatron-DeepSpeed's moe loss; not `loss scale`
                value = _value(text)
                if value is not None:
                    losses[key] = value
        stamp, zone, iteration_text, total_text = head.groups()
        iteration = int(iteration_text)
        self.settings["train_iters"] = int(total_text)
        if raw[_MS] is not None:
            milliseconds = _value(raw[_MS])
            seconds = None if milliseconds is None else milliseconds / 1000
        else:
            seconds = _value(raw[_S])
        loss = _value(raw[_LOSS])
        nan = _count(raw[_NAN]) or 0
        if raw[_NAN] is None and raw[_LOSS] is not None and loss is None:
            nan = 1  # a fork that prints the nan loss rather than counting it
        point = Point(
            iteration=iteration,
            line=number,
            at=None if stamp is None else _at(stamp, zone),
            consumed_samples=_count(raw[_CONSUMED]),
            tokens=_count(raw[_TOKENS]),
            global_batch_size=_count(raw[_BATCH]),
            loss=loss,
            losses=losses,
            learning_rate=_value(raw[_LR]),
            grad_norm=_value(raw[_GRAD]),
            step_seconds=seconds,
            tflops_per_accelerator=_value(raw[_TFLOPS] if raw[_TFLOPS] is not None else raw[_TFLOPS_DS]),
            tokens_per_second_per_accelerator=_value(raw[_TGS]),
            skipped_iterations=_count(raw[_SKIPPED]) or 0,
            nan_iterations=nan,
            iterations_in_interval=self._interval(iteration),
        )
        self._previous = iteration
        return point

    def _interval(self, iteration: int) -> int:
        """How many iterations the line sums. Megatron averages the step time and adds the counters over the
        logging interval, which only the argument dump (or the poster) says; without it a line is one iteration,
        since a gap between two lines of a pasted excerpt says nothing about the interval."""
        interval = self.settings.get("log_interval") or self.options.get("log_interval")
        if not interval:
            return 1
        previous = self._previous
        if previous is not None and previous < iteration:
            return min(int(interval), iteration - previous)
        return min(int(interval), iteration)  # the first line, or the first after a restart

    def _argument(self, line: str) -> None:
        found = _ARGUMENT.match(line)
        if found is None or found.group(1) not in _SETTINGS:
            return
        value = base.whole(found.group(2))
        if value is not None:
            self.settings[found.group(1)] = value


def _at(stamp: str, zone: str | None) -> datetime | None:
    # Megatron prints datetime.now() without a zone: the node's clock, taken as UTC. Appending the zone lets
    # fromisoformat build the aware datetime itself, several times faster than a replace(tzinfo=...) after it.
    try:
        if zone is None:
            return datetime.fromisoformat(stamp + "+00:00")
        return datetime.fromisoformat(stamp + zone).astimezone(UTC)
    except ValueError:
        return None
