"""GPU health from NVIDIA's dcgm-exporter: its Prometheus text, and the faults it shows.

Two halves that meet at one shape, a sample as `(labels, value)` with the metric name in the
`__name__` label (as Prometheus itself returns it):

- `parse_exposition(text)` reads the text exposition format (prometheus/docs
  exposition_formats.md, version 0.0.4) that a cluster without Prometheus posts, with prometheus_client's
  parser and our checks on top (line numbers, repeats, a cut last line, physical bounds); `sample_pairs()`
  turns its samples into pairs. `prometheus_vector_pairs(payload)` does the same for the JSON of
  an `/api/v1/query` vector result, so both sources go through the one `classify()`.
- `classify(pairs, ...)` applies the rule tables below (`XID_RULES`, `METRIC_RULES`) and returns
  one `GpuReading` per fault found, per host and GPU. The tables are plain data so a page can show
  staff exactly what the portal checks.

Rules, and why:
- Host: an `instance_id` label where relabelling added one (EC2 service discovery), else the `Hostname` label
  dcgm-exporter puts on every series (the node it runs on), else the `instance` label Prometheus adds (host:port
  of the scrape target), else `default_host`.
- DCGM_FI_DEV_XID_ERRORS is a gauge holding the last Xid seen since the exporter started (0: none);
  newer exporters copy it into an `err_code` label and add `err_msg`. It stays set until the
  exporter restarts (NVIDIA/dcgm-exporter#500), so a reading means "this GPU has had Xid N", and a
  repeat of the same Xid is invisible in it (NVIDIA/dcgm-exporter#190).
- The violation fields are cumulative counters of time spent throttled, in nanoseconds (DCGM's
  field reference; the exporter's "(in us)" help text was corrected in NVIDIA/dcgm-exporter#589).
  One scrape says how long a GPU has ever been throttled, not whether it is now, so they are judged
  only on an increase between two snapshots (`previous`, `window_seconds`). Power capping under
  heavy load is GPU Boost at work (NVIDIA/DCGM#285), hence the high bar for power, a low one for heat.
- DCGM_EXP_XID_ERRORS_COUNT (dcgm-exporter's internal/pkg/collector/xid_collector.go): per GPU and Xid (`xid` label),
  the times DCGM recorded it in the exporter's window (`window_size_in_ms`; --xid-count-window-size, default 300000),
  a 0 without `xid` for a GPU with none. A count above 0 is the gauge's Xid (same rule, same reading); both families
  naming one Xid are one reading, the gauge's. The count forgets an Xid the window passed: the event resolves then.
- Temperature against the GPU's own slowdown and shutdown temperatures: workloads.health.temperature.
- GPUs missing: an index below `expected_gpus` (0-7 on a p5) that no sample from the host carries.
  A host whose exporter sends nothing at all is not in the samples: the caller, who knows the node
  list, reports that.
- DCGM's blanks (`DCGM_BLANKS`: the field is not supported, not found or not permitted on this GPU) are no reading:
  never an event, never a refusal; `unsupported_fields()` names them so the board can say "not supported". DCGM
  marks a missing value with them, never with NaN: a NaN in a field the portal reads or bounds is refused like an
  infinity. A value outside its field's physical bounds (`BOUNDS`), a `gpu` label that is not a GPU index (0 to
  MAX_GPU, on any series: "-1" would make every real GPU look missing), an index far past the instance's GPUs, or
  more throttled time than time passed is a ParseError: the whole report is refused.
"""

import csv
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path
from types import MappingProxyType
from typing import Any

# -- The text exposition format: workloads.health.exposition (re-exported here for its callers).
from workloads.health import exposition, temperature  # noqa: E402
from workloads.health.exposition import _FLOAT, METRIC_TYPES, Exposition, MetricSample  # noqa: E402,F401
from workloads.telemetry_errors import ParseError

# -- DCGM's blanks and the physical bounds --------------------------------------------------------

# DCGM's sentinels for "no value" (dcgmlib/dcgm_structs.h, DCGM 4.6: *_BLANK, *_NOT_FOUND, *_NOT_SUPPORTED,
# *_NOT_PERMISSIONED). Older dcgm-exporters print them as the value of a field the GPU or vGPU does not support
# (4.5.2-4.8.1 skips them: internal/pkg/collector/utils.go isBlankValue, matched exactly as here). Every INT64 one is
# 2**63 once a float (Prometheus stores floats; no real count gets there).
DCGM_INT32_BLANK = 0x7FFFFFF0
DCGM_INT64_BLANK = 0x7FFFFFFFFFFFFFF0
DCGM_FP64_BLANK = 140737488355328.0
DCGM_BLANKS = frozenset(
    {
        *(float(DCGM_INT32_BLANK + n) for n in range(4)),
        *(float(DCGM_INT64_BLANK + n) for n in range(4)),
        *(DCGM_FP64_BLANK + n for n in range(4)),
    }
)


def is_blank(value: float) -> bool:
    """A DCGM sentinel: no reading of this field on this GPU (not supported, not found, not permitted)."""
    return value in DCGM_BLANKS


@dataclass(frozen=True)
class Bound:
    low: float
    high: float
    unit: str


MAX_COUNT = 1e12  # error counts and remapped rows: far beyond any GPU's memory rows, far below the blanks
MAX_NANOSECONDS = 1e18  # a cumulative throttling counter: 31 years
# The physically possible range of each field the portal reads, and of the common ones beside them: a reading outside
# is a broken exporter or a forged report, refused (400) with the whole report, never taken.
BOUNDS: Mapping[str, Bound] = MappingProxyType(
    {
        "DCGM_FI_DEV_GPU_TEMP": Bound(-40, 150, "°C"),
        "DCGM_FI_DEV_MEMORY_TEMP": Bound(-40, 150, "°C"),
        **{name: Bound(0, 150, "°C") for name in temperature.THRESHOLDS},  # 0: the GPU gives none
        "DCGM_FI_DEV_POWER_USAGE": Bound(0, 2000, "W"),  # above any board's limit (B200: 1,000 W)
        "DCGM_FI_DEV_SM_CLOCK": Bound(0, 5000, "MHz"),
        "DCGM_FI_DEV_MEM_CLOCK": Bound(0, 20000, "MHz"),
        "DCGM_FI_DEV_GPU_UTIL": Bound(0, 100, "%"),
        "DCGM_FI_DEV_MEM_COPY_UTIL": Bound(0, 100, "%"),
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": Bound(0, MAX_COUNT, "errors"),
        "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL": Bound(0, MAX_COUNT, "errors"),
        "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL": Bound(0, MAX_COUNT, "errors"),
        "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL": Bound(0, MAX_COUNT, "errors"),
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": Bound(0, MAX_COUNT, "rows"),
        "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS": Bound(0, MAX_COUNT, "rows"),
        "DCGM_FI_DEV_ROW_REMAP_FAILURE": Bound(0, 1, ""),
        "DCGM_FI_DEV_ROW_REMAP_PENDING": Bound(0, 1, ""),
        "DCGM_FI_DEV_THERMAL_VIOLATION": Bound(0, MAX_NANOSECONDS, "ns"),
        "DCGM_FI_DEV_POWER_VIOLATION": Bound(0, MAX_NANOSECONDS, "ns"),
        "DCGM_FI_DEV_FB_FREE": Bound(0, 1e7, "MiB"),
        "DCGM_FI_DEV_FB_USED": Bound(0, 1e7, "MiB"),
        "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": Bound(0, MAX_COUNT, ""),
        "DCGM_EXP_XID_ERRORS_COUNT": Bound(0, MAX_COUNT, "Xids"),
    }
)


def implausible(name: str, labels: Mapping[str, str], value: float) -> str | None:
    """Why a sample cannot be a real reading (None: it can). A blank is no reading, not out of bounds; NaN in a field
    the portal reads or bounds is no number a GPU gives (DCGM says "no value" with its blanks)."""
    bound = BOUNDS.get(name)
    if is_blank(value) or (bound is None and name != XID_METRIC):
        return None
    where = f" on GPU {labels['gpu'][:20]}" if "gpu" in labels else ""
    if math.isnan(value):
        return f"{name}{where} is NaN: not a reading (DCGM marks a missing value with its blanks)"
    if bound is None:  # the Xid: its own checks (_xid_readings) once it is a number
        return None if math.isfinite(value) else f"{name}{where} must be an Xid code, found {value:g}"
    if bound.low <= value <= bound.high:
        return None
    return f"{name}{where} is {value:g} {bound.unit}".rstrip() + f": outside {bound.low:g}..{bound.high:g}"


# -- Both sources to (labels, value) pairs --------------------------------------------------------

Pair = tuple[Mapping[str, str], float]


def parse_exposition(text: str) -> Exposition:
    """An exporter's text, read by workloads.health.exposition, every value checked against the physical bounds."""
    return exposition.parse_exposition(text, check=implausible)


def sample_pairs(samples: Iterable[MetricSample]) -> list[Pair]:
    """Parsed text samples as (labels with __name__, value), the shape Prometheus returns."""
    return [({**sample.labels, "__name__": sample.name}, sample.value) for sample in samples]


def prometheus_vector_pairs(payload: Mapping[str, Any]) -> list[Pair]:
    """The (labels, value) pairs of an `/api/v1/query` response whose result is an instant vector."""
    if payload.get("status") != "success":
        raise ParseError(None, f"the Prometheus query failed: {payload.get('error', 'no error given')}")
    data = payload.get("data")
    if not isinstance(data, Mapping) or data.get("resultType") != "vector":
        found = data.get("resultType") if isinstance(data, Mapping) else None
        raise ParseError(None, f"expected a vector result from /api/v1/query, found {found!r}")
    pairs: list[Pair] = []
    for index, item in enumerate(data.get("result") or []):
        metric, value = item.get("metric"), item.get("value")
        if not isinstance(metric, Mapping) or not all(isinstance(v, str) for v in metric.values()):
            raise ParseError(None, f"result {index}: metric must map label names to strings")
        if not isinstance(value, list | tuple) or len(value) != 2 or not isinstance(value[1], str):
            raise ParseError(None, f'result {index}: value must be [timestamp, "number"]')
        if not _FLOAT.fullmatch(value[1]):
            raise ParseError(None, f"result {index}: {value[1]!r} is not a number")
        pairs.append((dict(metric), float(value[1])))
    return pairs


# -- The rules ------------------------------------------------------------------------------------


class Severity(StrEnum):
    CRITICAL = "critical"
    WARNING = "warning"


class Action(StrEnum):
    MONITOR = "monitor"
    RESTART_JOB = "restart job"
    RESET_GPU = "reset GPU"
    REBOOT_NODE = "reboot node"
    REPLACE_NODE = "replace node"


@dataclass(frozen=True)
class XidRule:
    code: int | None  # None: any Xid not listed
    name: str
    severity: Severity
    action: Action
    why: str
    mnemonic: str = ""  # NVIDIA's name for the code
    resolution: str = ""  # NVIDIA's resolution bucket (immediate action): RESET_GPU, RESTART_BM (reboot), RESTART_APP
    source: str = ""
    applies_to_h100: str = ""  # the catalog's "Applies to H100" (YES / NO): P5 and P5en raise only the YES ones
    xid154_linkage: str = ""  # the driver from which Xid 154 follows this code with its recovery action


# The rules are a data file, NVIDIA's Xid catalog ("Analyzing Xid Errors with the Xid Catalog", Table 1: per code
# its mnemonic, the GPUs it applies to, its resolution buckets and the driver from which Xid 154 follows it) read for
# EC2, where a node that needs hardware work is replaced (stop/start lands on a new host). XID_CATALOG_SOURCE names
# the page and the driver range its rows were written for.
XID_CATALOG_PATH = Path(__file__).with_name("xid_catalog.csv")
XID_CATALOG_URL = "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"
XID_CATALOG_SOURCE = (
    f"NVIDIA Xid catalog, Table 1 ({XID_CATALOG_URL}), Ampere and newer GPUs; its Xid 154 linkage "
    "from GPU driver R565 (CUDA 12.7), Xid 143 from R575 (CUDA 12.9); read 2026-11-26"
)


def _load_xid_catalog(path: Path) -> dict[int, XidRule]:
    rules: dict[int, XidRule] = {}
    with path.open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            code = int(row["code"])
            rules[code] = XidRule(
                code,
                row["meaning"],
                Severity(row["severity"]),
                Action(row["action"]),
                row["why"],
                row["mnemonic"],
                row["nvidia_resolution"],
                row["source"],
                row["applies_to_h100"],
                row["xid154_linkage"],
            )
    return rules


XID_RULES: Mapping[int, XidRule] = MappingProxyType(_load_xid_catalog(XID_CATALOG_PATH))
OTHER_XID = XidRule(
    None,
    "other Xid",
    Severity.WARNING,
    Action.RESTART_JOB,
    "Most other Xids come from the application or the driver (13, 31, 43, 45...). Restart the job; open a "
    "case if the same Xid keeps coming back.",
    resolution="RESTART_APP",
)
# Xid 154's message names the recovery the driver now requires ("GPU recovery action changed from 0x0 (None) to
# 0x1 (GPU Reset Required)"); the exporter's err_msg label carries it when present. "None": nothing left to do.
_RECOVERY_ACTIONS = (("reboot", Action.REBOOT_NODE), ("reset", Action.RESET_GPU))
XID_RECOVERY_ACTION = 154
# NVLink5's unit errors (B100/GB200): the driver's message says Fatal, Link Fatal or Nonfatal, and NVIDIA resolves a
# fatal one by a GPU reset, a non-fatal one by nothing (the catalog's NVLink5 table).
NVLINK5_UNIT_ERRORS = range(144, 151)


def xid_rule(code: int, err_msg: str = "") -> XidRule:
    rule = XID_RULES.get(code, OTHER_XID)
    said = err_msg.lower()
    if code == XID_RECOVERY_ACTION and said:
        # The last state named wins: "changed from 0x1 (GPU Reset Required) to 0x2 (Node Reboot Required)".
        said = said.rsplit(" to ", 1)[-1]
        for word, action in _RECOVERY_ACTIONS:
            if word in said:
                return replace(rule, action=action)
        if "none" in said:
            return replace(rule, severity=Severity.WARNING, action=Action.MONITOR)
    if code in NVLINK5_UNIT_ERRORS and said:
        if "nonfatal" in said or "non-fatal" in said:
            return replace(rule, severity=Severity.WARNING, action=Action.MONITOR)
        if "fatal" in said:
            return replace(rule, severity=Severity.CRITICAL, action=Action.RESET_GPU)
    return rule


@dataclass(frozen=True)
class MetricRule:
    kind: str
    metric: str | None  # None: derived from all samples (missing GPUs)
    condition: str
    severity: Severity
    action: Action
    message: str  # the reading's message; {gpu}, {value}, {expected}, {reporting}, {minutes} filled in
    why: str
    min_fraction: float | None = None  # violations: least share of the window spent throttled


THERMAL_MIN_FRACTION = 0.01
POWER_MIN_FRACTION = 0.5

METRIC_RULES: tuple[MetricRule, ...] = (
    MetricRule(
        "ecc_dbe_volatile",
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
        "above 0",
        Severity.CRITICAL,
        Action.RESET_GPU,
        "GPU {gpu}: {value:g} double-bit ECC errors since the driver loaded",
        "Uncorrectable memory errors on a running GPU. Reset the GPU or reboot; replace the node if they come back.",
    ),
    MetricRule(
        "ecc_dbe_aggregate",
        "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL",
        "above 0",
        Severity.WARNING,
        Action.MONITOR,
        "GPU {gpu}: {value:g} double-bit ECC errors over its life",
        "History, possibly long fixed by row remapping: worth watching, not acting on.",
    ),
    MetricRule(
        "remapped_rows_uncorrectable",
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
        "above 0",
        Severity.WARNING,
        Action.MONITOR,
        "GPU {gpu}: {value:g} memory rows remapped after uncorrectable errors",
        "The spare rows did their job; a failed remap is what needs action.",
    ),
    MetricRule(
        "row_remap_failure",
        "DCGM_FI_DEV_ROW_REMAP_FAILURE",
        "above 0",
        Severity.CRITICAL,
        Action.REPLACE_NODE,
        "GPU {gpu}: row remapping failed",
        "The GPU has no way left to retire failing memory: its memory can no longer be trusted.",
    ),
    MetricRule(
        "row_remap_pending",
        "DCGM_FI_DEV_ROW_REMAP_PENDING",
        "above 0",
        Severity.WARNING,
        Action.RESET_GPU,
        "GPU {gpu}: a row remap waits for a GPU reset",
        "Work continues meanwhile; reset the GPU when the job allows.",
    ),
    MetricRule(
        "thermal_violation",
        "DCGM_FI_DEV_THERMAL_VIOLATION",
        f"throttled by heat for {THERMAL_MIN_FRACTION:.0%} of the window or more",
        Severity.WARNING,
        Action.REPLACE_NODE,
        "GPU {gpu}: throttled by heat {value:.0%} of the last {minutes:g} min",
        "A healthy P5 does not throttle for heat, and cooling is the host's: a GPU that keeps doing it "
        "needs a new node.",
        THERMAL_MIN_FRACTION,
    ),
    MetricRule(
        "power_violation",
        "DCGM_FI_DEV_POWER_VIOLATION",
        f"capped by power for {POWER_MIN_FRACTION:.0%} of the window or more",
        Severity.WARNING,
        Action.MONITOR,
        "GPU {gpu}: capped by power {value:.0%} of the last {minutes:g} min",
        "Brief capping is GPU Boost at work under load; capped most of the time, a GPU slows the whole "
        "job: compare it with the node's other GPUs.",
        POWER_MIN_FRACTION,
    ),
    MetricRule(
        "gpu_missing",
        None,
        "fewer GPUs reporting than the instance has",
        Severity.CRITICAL,
        Action.REPLACE_NODE,
        "GPU {gpu} is not reporting ({reporting} of {expected} GPUs report)",
        "A GPU that stops reporting has usually fallen off the bus (Xid 79).",
    ),
)
_RULE_BY_METRIC = {rule.metric: rule for rule in METRIC_RULES if rule.metric}
_MISSING = next(rule for rule in METRIC_RULES if rule.kind == "gpu_missing")
XID_METRIC = "DCGM_FI_DEV_XID_ERRORS"
XID_COUNT_METRIC = "DCGM_EXP_XID_ERRORS_COUNT"  # dcgm-exporter's windowed count per Xid (the `xid` label)


@dataclass(frozen=True)
class GpuReading:
    host: str
    gpu: int
    kind: str  # "xid" or a MetricRule.kind
    severity: Severity
    code: int | None  # the Xid; None for other kinds
    value: float  # the Xid, the error count, the share of the window throttled, or the GPUs missing
    message: str
    action: Action


def classify(
    samples: Iterable[Pair],
    *,
    expected_gpus: int | None = None,
    previous: Iterable[Pair] | None = None,
    window_seconds: float | None = None,
    default_host: str | None = None,
) -> tuple[GpuReading, ...]:
    """The faults in one snapshot of samples, sorted by host, GPU and kind.

    `expected_gpus` (8 for p5.48xlarge) turns on the missing-GPU check. `previous` is an earlier
    snapshot taken `window_seconds` before this one, needed to judge the throttling counters.
    """
    if previous is not None and not (window_seconds and window_seconds > 0):
        raise ValueError("previous needs window_seconds > 0: the time between the two snapshots")
    readings: set[GpuReading] = set()
    counted: set[GpuReading] = set()  # Xids from the count family: kept where the gauge did not say them
    temperatures = temperature.Temperatures()
    gpus_by_host: dict[str, set[str]] = defaultdict(set)
    before = _counters(previous, default_host) if previous is not None else {}
    for labels, value in samples:
        host = host_of(labels, default_host)
        name = labels.get("__name__", "")
        if "gpu" in labels:
            _check_index(labels["gpu"], name, host, expected_gpus)
            _gpu(labels, name)  # an index, on every series: a "-1" beside no real index makes every GPU "missing"
            gpus_by_host[host].add(labels["gpu"])
        problem = implausible(name, labels, value)
        if problem:
            raise ParseError(None, f"{host}: {problem}")
        if not math.isfinite(value) or is_blank(value):
            continue  # a blank is no reading: see unsupported_fields()
        if name in temperature.FAMILIES:
            if "gpu" in labels:  # a temperature of no GPU judges nothing
                temperatures.add(host, _gpu(labels, name), name, value)
            continue
        if name not in (XID_METRIC, XID_COUNT_METRIC) and name not in _RULE_BY_METRIC:
            continue
        gpu = _gpu(labels, name)
        if name == XID_METRIC:
            readings.update(_xid_readings(host, gpu, value, labels))
            continue
        if name == XID_COUNT_METRIC:
            counted.update(_xid_count_readings(host, gpu, value, labels))
            continue
        rule = _RULE_BY_METRIC[name]
        if rule.min_fraction is None:
            if value > 0:
                readings.add(_reading(rule, host, gpu, value))
        elif (host, gpu, name) in before:
            # A counter that went down was reset (driver reload): like Prometheus' increase(), count from 0.
            earlier = before[(host, gpu, name)]
            increase = value - earlier if value >= earlier else value
            if increase > MAX_WINDOW_SHARE * window_seconds * 1e9 + 60e9:
                raise ParseError(
                    None,
                    f"{name} on {host} GPU {gpu} rose by {increase / 1e9:g} s in {window_seconds:g} s: "
                    "a GPU cannot be throttled for longer than the time that passed",
                )
            fraction = min(increase / (window_seconds * 1e9), 1.0)
            if fraction >= rule.min_fraction:
                readings.add(_reading(rule, host, gpu, fraction, minutes=window_seconds / 60))
    said = {(r.host, r.gpu, r.code) for r in readings if r.kind == "xid"}
    readings.update(r for r in counted if (r.host, r.gpu, r.code) not in said)  # one Xid, one reading
    for host, fault in temperatures.faults():
        readings.add(
            GpuReading(host, fault.gpu, temperature.KIND, Severity(fault.severity), None, fault.temperature,
                       fault.message, Action.REPLACE_NODE)
        )  # fmt: skip
    if expected_gpus is not None:
        for host, gpus in gpus_by_host.items():
            readings.update(_missing_readings(host, gpus, expected_gpus))
    return tuple(sorted(readings, key=lambda r: (r.host, r.gpu, r.kind, r.value)))


def unsupported_fields(samples: Iterable[Pair], default_host: str | None = None) -> dict[tuple[str, int], set[str]]:
    """(host, GPU) -> the kinds of reading ("xid" or a MetricRule.kind) whose field came as a DCGM blank: the GPU (or
    the vGPU, or the exporter's permissions) does not give it, so the board shows "not supported", not "normal"."""
    blank: dict[tuple[str, int], set[str]] = defaultdict(set)
    for labels, value in samples:
        name = labels.get("__name__", "")
        if is_blank(value) and (name == XID_METRIC or name in _RULE_BY_METRIC):
            kind = "xid" if name == XID_METRIC else _RULE_BY_METRIC[name].kind
            blank[(host_of(labels, default_host), _gpu(labels, name))].add(kind)
    return dict(blank)


def host_of(labels: Mapping[str, str], default_host: str | None = None) -> str:
    """The node a sample is about: an EC2 instance id label (added by EC2 service discovery's relabelling), the
    exporter's Hostname, Prometheus's scrape target, or the caller's default."""
    host = (
        labels.get("instance_id")
        or labels.get("Hostname")
        or labels.get("hostname")  # dcgm-exporter's name for it since NVIDIA/dcgm-exporter#655 (2026)
        or labels.get("instance")
        or default_host
    )
    if not host:
        raise ParseError(
            None, f"a sample of {labels.get('__name__', '?')} has neither a Hostname nor an instance label"
        )
    return host


MAX_GPU = 255  # GPU indexes of one node
MAX_XID = 1_000_000  # Xid codes are below 200 today
GPU_INDEX_MARGIN = 8  # indexes past the instance type's GPUs tolerated (a catalog a generation behind)
# Throttled time cannot grow faster than time passes; the two snapshots' own times may be up to a scrape interval
# and Prometheus' 5-minute lookback off the window, hence the share and the minute.
MAX_WINDOW_SHARE = 2.0


def _check_index(gpu: str, name: str, host: str, expected_gpus: int | None) -> None:
    if (
        expected_gpus is not None
        and gpu.isascii()
        and gpu.isdigit()
        and int(gpu[:6]) >= expected_gpus + GPU_INDEX_MARGIN
    ):
        raise ParseError(
            None, f"{name} on {host} names GPU {gpu[:20]}, but the instance has {expected_gpus} GPUs (indexes from 0)"
        )


def _gpu(labels: Mapping[str, str], name: str) -> int:
    gpu = labels.get("gpu", "")
    if not gpu.isascii() or not gpu.isdigit():
        raise ParseError(None, f"a sample of {name} needs a gpu label holding the GPU index, found {gpu!r}")
    if len(gpu) > 3 or int(gpu) > MAX_GPU:
        raise ParseError(None, f"a sample of {name} has the GPU index {gpu[:20]}: at most {MAX_GPU}")
    return int(gpu)


def _xid_readings(host: str, gpu: int, value: float, labels: Mapping[str, str]) -> list[GpuReading]:
    if not value.is_integer() or not 0 <= value <= MAX_XID:
        raise ParseError(None, f"{XID_METRIC} on {host} GPU {gpu} must be an Xid code, found {value:g}")
    code = int(value)
    if code == 0:
        return []  # no Xid since the exporter started
    rule = xid_rule(code, labels.get("err_msg", ""))
    name = rule.name if rule.code is not None else (labels.get("err_msg") or rule.name)
    message = f"Xid {code} on GPU {gpu}: {name}"
    return [GpuReading(host, gpu, "xid", rule.severity, code, float(code), message, rule.action)]


def _xid_count_readings(host: str, gpu: int, value: float, labels: Mapping[str, str]) -> list[GpuReading]:
    """One series of DCGM_EXP_XID_ERRORS_COUNT: the Xid in its `xid` label, seen `value` times in the window."""
    if not value.is_integer():
        raise ParseError(None, f"{XID_COUNT_METRIC} on {host} GPU {gpu} must count Xids, found {value:g}")
    xid = labels.get("xid")
    if value == 0 or xid is None:
        return []  # the exporter's "no Xid in the window" series (no xid label), or a count that fell to 0
    if not xid.isascii() or not xid.isdigit() or len(xid) > 7:
        raise ParseError(None, f"{XID_COUNT_METRIC} on {host} GPU {gpu} names the Xid {xid[:20]!r}: not an Xid code")
    return _xid_readings(host, gpu, float(xid), {})


def _reading(rule: MetricRule, host: str, gpu: int, value: float, **fields: float) -> GpuReading:
    message = rule.message.format(gpu=gpu, value=value, **fields)
    return GpuReading(host, gpu, rule.kind, rule.severity, None, value, message, rule.action)


def _counters(previous: Iterable[Pair], default_host: str | None) -> dict[tuple[str, int, str], float]:
    counters: dict[tuple[str, int, str], float] = {}
    for labels, value in previous:
        name = labels.get("__name__", "")
        rule = _RULE_BY_METRIC.get(name)
        if rule is None or rule.min_fraction is None or not math.isfinite(value) or is_blank(value):
            continue
        key = (host_of(labels, default_host), _gpu(labels, name), name)
        counters[key] = max(value, counters.get(key, value))
    return counters


def _missing_readings(host: str, gpus: set[str], expected: int) -> list[GpuReading]:
    absent = sorted(set(range(expected)) - {int(gpu) for gpu in gpus if gpu.isascii() and gpu.isdigit()})
    reporting = expected - len(absent)
    return [
        _reading(_MISSING, host, index, float(len(absent)), reporting=reporting, expected=expected) for index in absent
    ]
