"""Trainium health from AWS's Neuron monitor: what `neuron-monitor` reports, as its Prometheus exporter
(`neuron-monitor-prometheus.py`, shipped with aws-neuron-tools) prints it. The part DCGM plays on GPUs.

The exporter's series the rules read (names as the exporter prints them; a scrape of a trn1n.32xlarge is in
tests/samples/neuron_monitor_prometheus_trn1n.txt):

- `hardware_ecc_events_total{neuron_device_index, event_type}`: the driver's ECC counters per Neuron device,
  event_type mem_ecc_corrected / mem_ecc_uncorrected / sram_ecc_corrected / sram_ecc_uncorrected (the
  neuron_hw_counters group). Uncorrected errors in device memory (HBM) or on-chip SRAM mean the device's results
  can no longer be trusted: critical, the node is replaced (on EC2 a stop/start lands on another host). Corrected
  ones are history worth watching. Every device of the node has these series, idle or not: the devices present.
- `neuron_hardware_info{neuron_device_count, neuroncore_per_device_count}` (an Info, value 1): what the driver
  sees. Fewer devices or NeuronCores than the instance type has (trn1.32xlarge: 16 devices, 32 NeuronCores) is a
  device that fell off, as a GPU missing is on a p5.
- `execution_errors_total{error_type="hardware"}`: executions a runtime saw fail on a hardware error.
- `neuroncore_utilization_ratio{neuroncore}`: 0..1 per NeuronCore in use by a runtime. Cores no runtime uses are
  not listed, so a core's absence here says nothing of its health; over the type's cores (the absent ones idle) it
  is the node's utilization, kept on the node for busy hours where Slurm says nothing.

`neuron-monitor`'s own JSON report (one line of its stdout; the Neuron guide's "The JSON output format") is read
into the same series (`report_pairs`): `system_data.neuron_hw_counters.neuron_devices[]` as the ECC counters,
`neuron_hardware_info` as the Info, each runtime's `neuroncore_counters.neuroncores_in_use` (percent) as the ratio
and its `execution_stats.error_summary.hardware` as the hardware errors; `instance_info.instance_id` names the node.
A sample of a trn1.2xlarge is in tests/samples/neuron_monitor_report_trn1.json.

Readings use dcgm's shape (`GpuReading`, its `gpu` the Neuron device index) so one path
(workloads.health.telemetry) opens and resolves the events. Values no Neuron device can give are refused as a
whole (ParseError, a 400 on a post), never stored.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from rest_framework import exceptions

from portal import parsers
from workloads.health.dcgm import Action, GpuReading, Pair, Severity, host_of
from workloads.telemetry_errors import ParseError

ECC_METRIC = "hardware_ecc_events_total"
HARDWARE_INFO_METRIC = "neuron_hardware_info"
EXECUTION_ERRORS_METRIC = "execution_errors_total"
UTILIZATION_METRIC = "neuroncore_utilization_ratio"
# Names only the Neuron exporter prints: a scrape holding one of them is read by these rules, not DCGM's.
SIGNATURE = frozenset(
    {ECC_METRIC, HARDWARE_INFO_METRIC, UTILIZATION_METRIC, "neuron_runtime_memory_used_bytes", EXECUTION_ERRORS_METRIC}
)
FAMILIES = (ECC_METRIC, HARDWARE_INFO_METRIC, EXECUTION_ERRORS_METRIC, UTILIZATION_METRIC)
ECC_EVENT_TYPES = ("mem_ecc_corrected", "mem_ecc_uncorrected", "sram_ecc_corrected", "sram_ecc_uncorrected")
TRAINIUM_ACCELERATORS = ("Trainium", "Inferentia")  # catalog accelerators neuron-monitor reports on

# Plausibility: no Neuron instance has more than 16 devices (trn1/trn1n/trn2.48xlarge), 8 cores per device
# (trn2's logical cores); an error counter of a running node stays far below 1e15.
MAX_DEVICES = 16
MAX_CORES_PER_DEVICE = 8
MAX_COUNT = 1e15


@dataclass(frozen=True)
class NeuronRule:
    kind: str
    condition: str
    severity: Severity
    action: Action
    message: str
    why: str


RULES: tuple[NeuronRule, ...] = (
    NeuronRule(
        "neuron_ecc_uncorrected",
        "uncorrected memory or SRAM ECC events above 0",
        Severity.CRITICAL,
        Action.REPLACE_NODE,
        "Neuron device {gpu}: {value:g} uncorrected ECC errors ({where})",
        "Uncorrectable errors in a Trainium device's memory or on-chip SRAM: its results can no longer be trusted. "
        "The node is replaced.",
    ),
    NeuronRule(
        "neuron_ecc_corrected",
        "corrected memory or SRAM ECC events above 0",
        Severity.WARNING,
        Action.MONITOR,
        "Neuron device {gpu}: {value:g} corrected ECC errors ({where})",
        "Corrected, no harm done yet; a rising count comes before uncorrected ones.",
    ),
    NeuronRule(
        "neuron_device_missing",
        "fewer Neuron devices or NeuronCores than the instance has",
        Severity.CRITICAL,
        Action.REPLACE_NODE,
        "Neuron device {gpu} is not reporting ({reporting} of {expected} devices report)",
        "A device the driver no longer sees has fallen off its bus; the node's collectives fail or run short.",
    ),
    NeuronRule(
        "neuron_cores_missing",
        "fewer NeuronCores than the instance has",
        Severity.CRITICAL,
        Action.REBOOT_NODE,
        "{reporting} of {expected} NeuronCores report",
        "Every device is there but the driver sees fewer cores on them: the driver or its configuration is wrong. "
        "Reboot the node; replace it if the count stays short.",
    ),
    NeuronRule(
        "neuron_hardware_errors",
        "executions failed on hardware errors",
        Severity.WARNING,
        Action.RESTART_JOB,
        "{value:g} executions failed on Neuron hardware errors",
        "The runtime saw hardware errors during executions (uncorrectable ECC among them): restart the job and "
        "watch the device's ECC counters.",
    ),
)
RULE = {rule.kind: rule for rule in RULES}
KINDS = tuple(RULE)


def is_neuron(pairs: Iterable[Pair]) -> bool:
    return any(labels.get("__name__") in SIGNATURE for labels, _value in pairs)


def expected_counts(instance_type: str, catalog: Mapping[str, tuple[str, int, int]]) -> tuple[int, int] | None:
    """(devices, NeuronCores) a node of this type has; None when it is not a Neuron instance."""
    accelerator, devices, cores = catalog.get(instance_type, ("", 0, 0))
    if not any(name in accelerator for name in TRAINIUM_ACCELERATORS):
        return None
    return devices, cores


@dataclass(frozen=True)
class NeuronNodeReading:
    faults: tuple[GpuReading, ...]
    utilization: float | None  # mean over the type's NeuronCores (cores not listed are idle); None: not read


def classify(pairs: Iterable[Pair], *, expected: tuple[int, int] | None, default_host: str | None = None):
    """One node's faults and utilization from one scrape. `expected` (16, 32 on trn1.32xlarge) turns on the
    missing-device check and bounds the device and core indexes."""
    max_devices = expected[0] if expected else MAX_DEVICES
    max_cores = expected[1] if expected else MAX_DEVICES * MAX_CORES_PER_DEVICE
    faults: dict[tuple[str, int | None], GpuReading] = {}
    ecc: dict[tuple[int, str], float] = {}
    devices_seen: set[int] = set()
    hardware_info: tuple[int, int] | None = None
    utilization: dict[int, float] = {}
    hardware_errors = 0.0
    host = None
    for labels, value in pairs:
        name = labels.get("__name__", "")
        if name not in FAMILIES:
            continue
        host = host or host_of(labels, default_host)
        if name == ECC_METRIC:
            device = _index(labels, "neuron_device_index", max_devices, name)
            event = labels.get("event_type", "")
            if event not in ECC_EVENT_TYPES:
                raise ParseError(None, f"{name}: unknown event_type {event[:40]!r}")
            ecc[(device, event)] = max(_count(value, name), ecc.get((device, event), 0.0))
            devices_seen.add(device)
        elif name == HARDWARE_INFO_METRIC:
            count = _index(labels, "neuron_device_count", max_devices + 1, name)
            per_device = _index(labels, "neuroncore_per_device_count", MAX_CORES_PER_DEVICE + 1, name)
            hardware_info = (count, per_device)
        elif name == EXECUTION_ERRORS_METRIC:
            if labels.get("error_type") == "hardware":
                hardware_errors += _count(value, name)
            else:
                _count(value, name)
        else:  # utilization
            core = _index(labels, "neuroncore", max_cores, name)
            if not math.isfinite(value) or not 0 <= value <= 1:
                raise ParseError(None, f"{name} of NeuronCore {core} must be between 0 and 1, found {value:g}")
            utilization[core] = max(value, utilization.get(core, 0.0))
    host = host or default_host or ""
    for (device, event), value in sorted(ecc.items()):
        if value <= 0:
            continue
        kind = "neuron_ecc_uncorrected" if event.endswith("_uncorrected") else "neuron_ecc_corrected"
        where = "device memory" if event.startswith("mem_") else "SRAM"
        earlier = faults.get((kind, device))
        total = value + (earlier.value if earlier else 0)
        both = "device memory and SRAM" if earlier else where
        faults[(kind, device)] = _reading(kind, host, device, total, where=both)
    if expected:
        devices, cores = expected
        # The driver's own count wins when it sees fewer devices than still have counters listed.
        if hardware_info is not None and (not devices_seen or hardware_info[0] < len(devices_seen)):
            present = set(range(hardware_info[0]))
        else:
            present = devices_seen
        if devices_seen or hardware_info is not None:
            for device in sorted(set(range(devices)) - present):
                faults[("neuron_device_missing", device)] = _reading(
                    "neuron_device_missing", host, device, float(devices - len(present)),
                    reporting=len(present), expected=devices,
                )  # fmt: skip
        if hardware_info is not None and len(present) >= devices and hardware_info[0] * hardware_info[1] < cores:
            reporting = hardware_info[0] * hardware_info[1]
            faults[("neuron_cores_missing", None)] = _reading(
                "neuron_cores_missing", host, None, float(cores - reporting), reporting=reporting, expected=cores
            )
    if hardware_errors > 0:
        faults[("neuron_hardware_errors", None)] = _reading("neuron_hardware_errors", host, None, hardware_errors)
    mean = None
    if utilization:
        cores = expected[1] if expected else max(utilization) + 1
        mean = sum(utilization.values()) / cores
    return NeuronNodeReading(faults=tuple(faults.values()), utilization=mean)


def _reading(kind: str, host: str, device: int | None, value: float, **fields) -> GpuReading:
    rule = RULE[kind]
    message = rule.message.format(gpu=device, value=value, **fields)
    return GpuReading(host, device, kind, rule.severity, None, value, message, rule.action)


def _index(labels: Mapping[str, str], label: str, bound: int, name: str) -> int:
    raw = labels.get(label, "")
    if not raw.isascii() or not raw.isdigit():
        raise ParseError(None, f"a sample of {name} needs a {label} label holding a whole number, found {raw[:20]!r}")
    if len(raw) > 4 or int(raw) >= bound:
        raise ParseError(None, f"a sample of {name} has {label} {raw[:20]}: at most {bound - 1} on this node")
    return int(raw)


def _count(value: float, name: str) -> float:
    if not math.isfinite(value) or not 0 <= value <= MAX_COUNT or not value.is_integer():
        raise ParseError(None, f"{name} must be a count (a whole number from 0), found {value:g}")
    return value


def is_report(text: str) -> bool:
    """JSON (a neuron-monitor report) rather than exporter text: exposition text never starts with a bracket."""
    return text.lstrip().startswith(("{", "["))


def report_pairs(text: str) -> list[Pair]:
    """One neuron-monitor JSON report as the exporter's series, every value checked: a report a Neuron device cannot
    have written is refused whole (ParseError naming the field)."""
    try:
        report = parsers.loads(text)  # the API's JSON rules, its depth limit among them
    except exceptions.ParseError as error:
        raise ParseError(None, f"not a neuron-monitor JSON report: {str(error.detail)[:120]}") from None
    if not isinstance(report, dict):
        raise ParseError(None, "a neuron-monitor report is a JSON object")
    instance = _object(report, "instance_info")
    node = {key: instance[key] for key in ("instance_id", "instance_type") if isinstance(instance.get(key), str)}
    if not node.get("instance_id"):
        raise ParseError(None, "instance_info.instance_id is missing: post the report neuron-monitor wrote")
    pairs: list[Pair] = []
    counters = _object(_object(report, "system_data"), "neuron_hw_counters", "system_data.")
    devices = counters.get("neuron_devices") or []
    if not isinstance(devices, list):
        raise ParseError(None, "system_data.neuron_hw_counters.neuron_devices must be a list")
    for position, device in enumerate(devices):
        where = f"system_data.neuron_hw_counters.neuron_devices[{position}]"
        if not isinstance(device, dict):
            raise ParseError(None, f"{where} must be an object")
        index = _whole(device.get("neuron_device_index"), f"{where}.neuron_device_index", MAX_DEVICES - 1)
        for event in ECC_EVENT_TYPES:
            if event in device:
                value = _whole(device[event], f"{where}.{event}", MAX_COUNT)
                labels = {**node, "__name__": ECC_METRIC, "neuron_device_index": str(int(index)), "event_type": event}
                pairs.append((labels, value))
    hardware = _object(report, "neuron_hardware_info")
    if "neuron_device_count" in hardware and not hardware.get("error"):
        count = _whole(hardware["neuron_device_count"], "neuron_hardware_info.neuron_device_count", MAX_DEVICES)
        per = _whole(hardware.get("neuroncore_per_device_count"), "neuron_hardware_info.neuroncore_per_device_count",
                     MAX_CORES_PER_DEVICE)  # fmt: skip
        labels = {**node, "__name__": HARDWARE_INFO_METRIC, "neuron_device_count": str(int(count)),
                  "neuroncore_per_device_count": str(int(per))}  # fmt: skip
        pairs.append((labels, 1.0))
    runtimes = report.get("neuron_runtime_data") or []
    if not isinstance(runtimes, list):
        raise ParseError(None, "neuron_runtime_data must be a list")
    for position, runtime in enumerate(runtimes):
        where = f"neuron_runtime_data[{position}].report"
        body = _object(runtime if isinstance(runtime, dict) else {}, "report", f"neuron_runtime_data[{position}].")
        in_use = _object(_object(body, "neuroncore_counters", f"{where}."), "neuroncores_in_use",
                         f"{where}.neuroncore_counters.")  # fmt: skip
        for core, reading in in_use.items():
            path = f"{where}.neuroncore_counters.neuroncores_in_use.{core[:8]}"
            if not core.isascii() or not core.isdigit() or len(core) > 4:
                raise ParseError(None, f"{path}: a NeuronCore index is a whole number")
            percent = reading.get("neuroncore_utilization") if isinstance(reading, dict) else None
            if isinstance(percent, bool) or not isinstance(percent, int | float) or not 0 <= percent <= 100:
                raise ParseError(None, f"{path}.neuroncore_utilization must be a percentage (0 to 100), found "
                                       f"{str(percent)[:20]}")  # fmt: skip
            pairs.append(({**node, "__name__": UTILIZATION_METRIC, "neuroncore": core}, percent / 100))
        errors = _object(_object(body, "execution_stats", f"{where}."), "error_summary", f"{where}.execution_stats.")
        if "hardware" in errors:
            value = _whole(errors["hardware"], f"{where}.execution_stats.error_summary.hardware", MAX_COUNT)
            pairs.append(({**node, "__name__": EXECUTION_ERRORS_METRIC, "error_type": "hardware"}, value))
    return pairs


def _object(parent: Mapping[str, Any], key: str, prefix: str = "") -> Mapping[str, Any]:
    value = parent.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ParseError(None, f"{prefix}{key} must be an object")
    return value


def _whole(value: Any, path: str, bound: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ParseError(None, f"{path} must be a whole number, found {str(value)[:20]}")
    if isinstance(value, float) and not value.is_integer():
        raise ParseError(None, f"{path} must be a whole number, found {value:g}")
    if not 0 <= value <= bound:
        raise ParseError(None, f"{path} is {value:g}: it must be between 0 and {bound:g}")
    return float(value)
