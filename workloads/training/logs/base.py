"""What every training-log format reads into, and the pieces every format's parser shares.

A format module (megatron.py, nemo.py, …) holds one `LineParser` subclass: `matches(line)` says cheaply whether a
line looks like one of its progress lines (used to detect the format and to count garbled lines), and `feed(line,
number)` turns one line into a `Point`, a `Problem`, or None for a line it has nothing to say about. Lines reach
`feed` already cleaned by `clean_line` (launcher rank prefixes and ANSI colours removed); a line may still start
with a timestamp, which the format reads when it prints one.

Rules shared by every format:
- A number printed `nan`, `inf` or `-nan` is a missing value (None), never a zero: `number()` does this.
- A point is one optimizer step (iteration), numbered as the log numbers them (1-based for Megatron, the global
  step for the others); restarts show as an iteration number going back, which the ingest decides, not the parser.
- Cumulative figures (consumed samples, tokens) are what the log says at that iteration; rates (tokens/s, TFLOP/s)
  are as logged, implausible or not: the figures (workloads.training.figures) judge them.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import datetime

# Launcher prefixes before a line: torchrun's `[default7]:` (and `[rank3]:`), srun --label's `12: `, Open MPI's
# `[1,0]<stdout>:`, MPICH's `[0] `, and any run of them.
RANK_PREFIX = re.compile(r"^(?:\s*(?:\[(?:default|rank)\d+\]:|\d+:\s|\[\d+,\d+\]<std(?:out|err)>:|\[\d+\]\s))+")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_NUMBER = re.compile(r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$")


def clean_line(line: str) -> str:
    """The line as the training script printed it: without ANSI colour codes, launcher rank prefixes, or the
    trailing carriage return and spaces."""
    line = ANSI.sub("", line).rstrip("\r\n ")
    return RANK_PREFIX.sub("", line, count=1)


def number(text: str | None) -> float | None:
    """A printed number, or None for nan, inf, an empty or unreadable value: a missing value is never a zero."""
    if text is None:
        return None
    text = text.strip().strip("'\"").rstrip(",")
    if not _NUMBER.match(text):
        return None  # nan, -nan, inf, 'N/A', ...
    value = float(text)
    return value if math.isfinite(value) else None


def whole(text: str | None) -> int | None:
    """A printed whole number (a count, an iteration), or None when it is missing or not whole."""
    value = number(text)
    if value is None or value != int(value):
        return None
    return int(value)


@dataclass(slots=True)
class Point:
    """One training iteration as the log printed it. Only `iteration` and `line` are always set."""

    iteration: int
    line: int  # 1-based line number in the text parsed (for messages naming the line)
    at: datetime | None = None  # the line's own timestamp (aware), when the log prints one
    consumed_samples: int | None = None  # cumulative, as logged
    tokens: int | None = None  # cumulative tokens, when the log prints them (else samples × sequence length)
    global_batch_size: int | None = None  # samples in this iteration, when logged
    loss: float | None = None  # the language-model loss (Megatron's "lm loss"), None when nan or absent
    losses: dict[str, float] = field(default_factory=dict)  # other logged losses (MoE load balancing, z-loss, ...)
    learning_rate: float | None = None
    grad_norm: float | None = None
    step_seconds: float | None = None  # wall time of this iteration (or the average over the logging interval)
    tflops_per_accelerator: float | None = None  # as logged ("throughput per GPU (TFLOP/s/GPU)")
    tokens_per_second: float | None = None  # as logged, for the whole job
    tokens_per_second_per_accelerator: float | None = None  # as logged (torchtitan's tps is per device)
    skipped_iterations: int = 0  # iterations the log says were skipped (Megatron's counter over the interval)
    nan_iterations: int = 0  # iterations whose loss was nan (Megatron's counter, or a nan loss printed)
    iterations_in_interval: int = 1  # a line summing several iterations (logging interval > 1)


@dataclass(slots=True)
class Problem:
    """A line that looked like a progress line of the format but could not be read, named for the person."""

    line: int
    message: str


@dataclass
class ParsedLog:
    format: str | None  # the format's name (FORMATS' key), None when no line of any format was seen
    points: list[Point]
    problems: list[Problem]  # garbled progress lines: kept out, each named
    other_lines: int  # lines that are not progress lines (arguments, warnings, eval, checkpoints): skipped
    settings: dict[str, int | float | str]  # what the log says of the run: seq_length, global_batch_size, world_size
    summary: dict[str, float] = field(default_factory=dict)  # end-of-training summary (HF's train_runtime, ...)
    carried: dict = field(default_factory=dict)  # the parser's state at the end, for the log's next chunk


class LineParser:
    """One format's reader, fed one cleaned line at a time. Subclasses set `name` and `label` and write
    `matches` and `feed`; `settings` and `summary` collect what the log says of the whole run.

    A log arrives in chunks (the reporter sends what is new): `CARRIED` names the attributes a parser needs from the
    end of one chunk to read the next (the last iteration a count continues from, a cumulative counter), which
    `carried()` gives and `restore()` puts back; the chunk's settings come back through the options."""

    name = ""
    label = ""
    CARRIED: tuple[str, ...] = ()

    def __init__(self, options: dict | None = None) -> None:
        self.options = dict(options or {})  # what the poster says (seq_length, logging_steps, ...)
        self.settings: dict[str, int | float | str] = {}
        self.summary: dict[str, float] = {}

    @classmethod
    def matches(cls, line: str) -> bool:
        raise NotImplementedError

    def feed(self, line: str, number: int) -> Point | Problem | None:
        raise NotImplementedError

    def carried(self) -> dict:
        return {name: getattr(self, name) for name in self.CARRIED}

    def restore(self, carried: dict) -> None:
        for name in self.CARRIED:
            if name in carried:
                setattr(self, name, carried[name])


# name -> parser class, in detection order (the most specific first): each format module registers its parser, and
# workloads.training.logs imports them in that order.
FORMATS: dict[str, type[LineParser]] = {}


def register(parser: type[LineParser]) -> type[LineParser]:
    FORMATS[parser.name] = parser
    return parser
