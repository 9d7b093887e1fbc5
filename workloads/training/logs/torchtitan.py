"""torchtitan training logs: one point per metrics line.

torchtitan's `MetricsProcessor.log()` (torchtitan/components/metrics.py; train.py's training loop before March 2025)
prints one line every `metrics.log_freq` steps, and at step 1, through Python logging:

    [rank0]:[titan] 2025-06-04 11:02:49,027 - root - INFO - step: 10  loss: 10.4260  memory: 30.89GiB(32.51%)
    tps: 6,344  tflops: 367.39  mfu: 37.15%

What is read, and the versions it was checked against (pytorch/torchtitan's history of metrics.py and train.py, and
the real logs in tests/samples/training/, whose origins SOURCES.md gives):
- March 2024 to November 2024: `wps:` (train.py, "tokens per second, abbr. as wps by convention"), no `tflops`,
  no `[titan]` in the logger format.
- November 2024 on (commit 4d182a13e): `tps:`; `tflops:` and the `[titan]` logger prefix since February 2025
  (4e3266374, cbb7acd5b); `grad_norm:` since June 2025 (a85e2a536); the loss with 5 decimals since February 2026
  (cf86edc97); `mfu: N/A` when float8 / MX quantization is on. Samples: the torchao float8 tutorial's Llama 3 8B
  run on 8 H100s (2025), and two Qwen3 14B runs on 8 B200s from torchtitan's autoresearch branch (2026, ANSI
  colours, bf16 and MXFP8).
- Both `wps` and `tps` are tokens per second per device: the tokens a data-parallel rank saw since the last line,
  divided by the elapsed time and by the non-data-parallel degree (`ntokens_since_last_log / (time_delta *
  parallel_dims.non_data_parallel_size)`, metrics.py), so `tokens_per_second_per_accelerator`. `tflops` is
  `num_flops_per_token * tps / 1e12`: `tflops_per_accelerator`.

Not points: `validate step:` lines (the validator's loss), checkpoint, GC and profiler lines. The setup lines fill
`settings`: `Training starts at step 1, with local batch size 1, global batch size 8, sequence length 8192, ...`
(to March 2025), `Trainer is initialized with local batch size 8, global batch size 64, ..., sequence length 2048,
...` (March 2025 to August 2026), `... N tokens per train step, ..., maximum context length L, ...` (since August
2026: `tokens_per_step` and `seq_length`, no batch size), the device mesh (`Building 1-D device mesh with
['dp_shard'], [8]`, or `Building device mesh with parallelism: pp=1, dp_replicate=1, dp_shard=8, cp=1, tp=1, ep=1`:
world size is the product, expert parallelism folds into it) and `Peak FLOPS used for computing MFU: 9.890e+14`
(`peak_flops`).

Choices:
- The iteration is torchtitan's `step`, 1-based: the step counter is raised before the step runs, so a line's step
  counts the steps done including its own.
- `tps` and `tflops` are means since the previous line; the loss and grad norm are the step's own. When the log (the
  2024-2025 `Running with args` dump, or an echoed command line with `--metrics.log_freq=N`: `settings["log_interval"]`)
  or the poster (`log_interval` or `log_freq` option) says the logging frequency, a line stands for that many steps
  (fewer for the first line and after a restart); a gap between two lines alone is not taken as the interval, since an
  excerpt may have left lines out.
- The logged `mfu` is not kept: it is `tflops` over torchtitan's own peak figure, which `peak_flops` records; the
  figures compute the MFU from `tflops` and the allocation's hardware. `memory` is not kept either.
- The timestamp is Python logging's asctime, the node's local clock without a zone: taken as UTC.
- A line is read only up to a readable `mfu` (the last field in every version since March 2024): a line cut before it
  is a problem, so a cut `tps: 5,4` is never read as 54.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime

from django.utils.translation import gettext as _

from workloads.training.logs.base import LineParser, Point, Problem, number, register, whole

# `- step: 10  loss:` after the logger's `- INFO -`, or at the start of a line printed without a logger format;
# `validate step:` is not matched.
_HEAD = re.compile(r"(?:^|- )step:\s*(\d+)\s+loss:")
_FIELD = re.compile(r"(\w+):\s*(\S+)")
_MFU = re.compile(r"(?:[\d.]+%|N/A)")
_STAMP = re.compile(r"(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d),(\d{3})")
_SETUP = {
    "global_batch_size": re.compile(r"global batch size (\d+)"),
    "seq_length": re.compile(r"(?:sequence|maximum context) length (\d+)"),
    "tokens_per_step": re.compile(r"(\d+) tokens per train step"),
}
_MESH_DIMS = re.compile(r"Building \d+-D device mesh with \[[^\]]*\], \[([\d, ]+)\]")
_MESH_PARALLELISM = re.compile(r"Building device mesh with parallelism: (.*)")
_DEGREE = re.compile(r"(\w+)=(\d+)")
_WORLD_DEGREES = ("pp", "dp_replicate", "dp_shard", "cp", "tp")  # ParallelDims: their product is WORLD_SIZE
_PEAK = re.compile(r"Peak FLOPS used for computing MFU: (\S+)")
# The logging frequency, when the log shows it: the `Running with args: {...}` dump (2024-2025), or the command line
# that `run_train.sh` or `set -x` echoes (`--metrics.log_freq=10`).
_LOG_FREQ = re.compile(r"(?:'log_freq': |--metrics\.log_freq[= ])(\d+)")


def _excerpt(line: str) -> str:
    text = line.strip()
    return text if len(text) <= 80 else text[:80] + "…"


def _grouped(text: str | None) -> float | None:
    """A number printed with thousands separators (`tps: 5,423`, `tflops: 1,000.13`)."""
    return None if text is None else number(text.replace(",", ""))


@register
class TorchtitanParser(LineParser):
    name = "torchtitan"
    label = "torchtitan"
    CARRIED = ("_previous", "_previous_interval")  # from one chunk of a log to the next

    def __init__(self, options: dict | None = None) -> None:
        super().__init__(options)
        self._previous: int | None = None  # the last point's step, for the steps a line stands for
        self._previous_interval = 1

    @classmethod
    def matches(cls, line: str) -> bool:
        return "step:" in line and "loss:" in line and _HEAD.search(line) is not None

    def feed(self, line: str, number_: int) -> Point | Problem | None:
        if "loss:" in line and "step:" in line:
            head = _HEAD.search(line)
            if head is not None:
                return self._metrics(line, head, number_)
            return None
        if "log_freq" in line:
            found = _LOG_FREQ.search(line)
            frequency = whole(found.group(1)) if found is not None else None
            if frequency:
                self.settings.setdefault("log_interval", frequency)
        elif " - " in line:  # the setup lines all come through the logger
            self._setup(line)
        return None

    def _metrics(self, line: str, head: re.Match[str], number_: int) -> Point | Problem:
        fields = dict(_FIELD.findall(line, head.end() - len("loss:")))
        mfu = fields.get("mfu")
        rate = fields.get("tps") or fields.get("wps")
        if mfu is None or rate is None or not _MFU.match(mfu):
            return Problem(
                number_,
                _("a torchtitan metrics line cut before its last value (mfu): %(text)s") % {"text": _excerpt(line)},
            )
        step = int(head.group(1))
        point = Point(iteration=step, line=number_, iterations_in_interval=self._interval(step))
        loss = fields.get("loss")
        point.loss = number(loss)
        if loss is not None and loss.lstrip("+-").lower() == "nan":
            point.nan_iterations = 1
        point.grad_norm = number(fields.get("grad_norm"))
        point.learning_rate = number(fields.get("lr"))  # forks that print it
        point.tokens_per_second_per_accelerator = _grouped(rate)
        point.tflops_per_accelerator = _grouped(fields.get("tflops"))
        stamp = _STAMP.search(line, 0, head.start())
        if stamp is not None:
            parts = [int(part) for part in stamp.groups()]
            point.at = datetime(*parts[:6], parts[6] * 1000, tzinfo=UTC)
        return point

    def _interval(self, step: int) -> int:
        """How many steps the line's tps and tflops stand for: the logging frequency when the log or the poster says
        it, capped by the gap since the previous line (the first line counts from step 1). The same step twice is
        another rank's copy of the same line."""
        previous = self._previous
        if previous == step:
            return self._previous_interval
        frequency = whole(
            str(self.settings.get("log_interval") or self.options.get("log_interval") or self.options.get("log_freq"))
        )
        interval = 1
        if frequency:
            gap = step - previous if previous is not None and previous < step else step
            interval = max(1, min(frequency, gap))
        self._previous, self._previous_interval = step, interval
        return interval

    def _setup(self, line: str) -> None:
        settings = self.settings
        if "Training starts at step" in line or "Trainer is initialized with" in line:
            for key, pattern in _SETUP.items():
                found = pattern.search(line)
                if found is not None:
                    settings.setdefault(key, int(found.group(1)))
        elif "device mesh with" in line:
            dims = _MESH_DIMS.search(line)
            if dims is not None:
                settings.setdefault("world_size", math.prod(int(d) for d in dims.group(1).split(",") if d.strip()))
                return
            parallelism = _MESH_PARALLELISM.search(line)
            if parallelism is not None:
                degrees = dict(_DEGREE.findall(parallelism.group(1)))
                if all(name in degrees for name in _WORLD_DEGREES):
                    settings.setdefault("world_size", math.prod(int(degrees[name]) for name in _WORLD_DEGREES))
        elif "Peak FLOPS" in line:
            found = _PEAK.search(line)
            peak = number(found.group(1)) if found is not None else None
            if peak is not None:
                settings.setdefault("peak_flops", peak)
