"""GPU temperature against the GPU's own thresholds, as DCGM publishes them (workloads.health.dcgm calls it).

DCGM's field list (dcgmlib/dcgm_fields.h) gives, per GPU: the temperature (DCGM_FI_DEV_GPU_TEMP, field 150), the
temperature at which the GPU slows its clocks down (DCGM_FI_DEV_SLOWDOWN_TEMP, 158) and the one at which it shuts
down (DCGM_FI_DEV_SHUTDOWN_TEMP, 159); for the memory, its temperature (DCGM_FI_DEV_MEMORY_TEMP, 140) and "the
maximum operating temperature for the memory of this GPU: above this temperature slowdown will occur"
(DCGM_FI_DEV_MEM_MAX_OP_TEMP, 151). dcgm-exporter sends a field only if its counters file names it; the default file
names the two temperatures and none of the thresholds. So a threshold the exporter does not send is the H100 SXM5's
(H100_DEFAULTS) and the event says so: a reading is never judged against nothing.

Why these severities: at or above the slowdown temperature the GPU runs at reduced clocks and the whole job waits for
it (a warning, as a throttling counter is); within SHUTDOWN_MARGIN of the shutdown temperature the GPU is about to
power off and take the node's jobs with it (critical: a case). On EC2 the cooling is the host's: the answer to a GPU
that runs this hot is a new node. The throttling counters (DCGM_FI_DEV_THERMAL_VIOLATION) stay beside these: both are
the GPU's heat, one event of kind thermal_violation per GPU, the worst of them (workloads.health.telemetry).
"""

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from django.utils.translation import gettext as _


def gettext_noop(message: str) -> str:
    """Marks a msgid for `make makemessages` (xgettext's gettext_noop keyword) without Django's settings, which
    django.utils.translation.gettext_noop reads: the rules are read where no settings are configured too."""
    return message


GPU_TEMP = "DCGM_FI_DEV_GPU_TEMP"
MEMORY_TEMP = "DCGM_FI_DEV_MEMORY_TEMP"
SLOWDOWN_TEMP = "DCGM_FI_DEV_SLOWDOWN_TEMP"
SHUTDOWN_TEMP = "DCGM_FI_DEV_SHUTDOWN_TEMP"
MEMORY_MAX_TEMP = "DCGM_FI_DEV_MEM_MAX_OP_TEMP"
THRESHOLDS = (SLOWDOWN_TEMP, SHUTDOWN_TEMP, MEMORY_MAX_TEMP)
FAMILIES = (GPU_TEMP, MEMORY_TEMP, *THRESHOLDS)
KIND = "thermal_violation"  # the GPU's heat: one event kind with the throttling counter (HealthEvent.Kind.THERMAL)

# What the driver reports for a Hopper SXM5 board (`nvidia-smi -q`, Temperature: GPU Shutdown Temp 92 C, GPU Slowdown
# Temp 89 C, Memory Max Operating Temp 95 C, on a 700 W H800, H100 SXM5's export variant on the same board, driver
# 525.105.17: liguodongiot/llm-action, docs/llm-base/nvidia-smi.md). NVIDIA's H100 product briefs print no thresholds.
H100_DEFAULTS: Mapping[str, float] = {SLOWDOWN_TEMP: 89.0, SHUTDOWN_TEMP: 92.0, MEMORY_MAX_TEMP: 95.0}
H100_DEFAULTS_SOURCE = (
    "nvidia-smi -q on a Hopper SXM5 board (H800, 700 W, driver 525.105.17): GPU Shutdown Temp 92 C, GPU Slowdown "
    "Temp 89 C, Memory Max Operating Temp 95 C (liguodongiot/llm-action, docs/llm-base/nvidia-smi.md)"
)
SHUTDOWN_MARGIN = 1.0  # °C below the shutdown temperature from which it is critical (H100: 91 °C and up)

# The stored message (English) and, through gettext, the one a reader sees (workloads.health.incidents.event_summary).
AT_SLOWDOWN = gettext_noop("GPU %(gpu)s at %(temp)s °C: at or above its slowdown temperature, %(limit)s °C")
NEAR_SHUTDOWN = gettext_noop("GPU %(gpu)s at %(temp)s °C: near its shutdown temperature, %(limit)s °C")
MEMORY_AT_MAX = gettext_noop(
    "GPU %(gpu)s memory at %(temp)s °C: at or above its maximum operating temperature, %(limit)s °C"
)
DEFAULTED = gettext_noop("(H100 default: the exporter does not send this threshold)")
_TEXTS = (AT_SLOWDOWN, NEAR_SHUTDOWN, MEMORY_AT_MAX)


@dataclass(frozen=True)
class TemperatureRule:
    """A row of the health rules page (beside workloads.health.dcgm.METRIC_RULES, in the same shape)."""

    kind: str
    metric: str
    condition: str
    severity: str
    action: str
    message: str
    why: str


TEMPERATURE_RULES: tuple[TemperatureRule, ...] = (
    TemperatureRule(
        KIND,
        GPU_TEMP,
        "at or above the GPU's slowdown temperature (DCGM_FI_DEV_SLOWDOWN_TEMP; H100 default 89 °C)",
        "warning",
        "replace node",
        AT_SLOWDOWN,
        "The GPU runs at reduced clocks and the whole job waits for it; on EC2 the cooling is the host's: a GPU "
        "that stays this hot needs a new node.",
    ),
    TemperatureRule(
        KIND,
        GPU_TEMP,
        "within 1 °C of the GPU's shutdown temperature (DCGM_FI_DEV_SHUTDOWN_TEMP; H100 default 92 °C)",
        "critical",
        "replace node",
        NEAR_SHUTDOWN,
        "The GPU is about to power off and fail the node's jobs: move the work and replace the node.",
    ),
    TemperatureRule(
        KIND,
        MEMORY_TEMP,
        "at or above the memory's maximum operating temperature (DCGM_FI_DEV_MEM_MAX_OP_TEMP; H100 default 95 °C)",
        "warning",
        "replace node",
        MEMORY_AT_MAX,
        "Above it the memory slows down (DCGM's field reference): memory-bound work slows with it.",
    ),
)


@dataclass(frozen=True)
class TemperatureFault:
    gpu: int
    severity: str  # "warning" or "critical" (workloads.health.dcgm.Severity values)
    temperature: float
    message: str


@dataclass
class _Gpu:
    readings: dict[str, float] = field(default_factory=dict)  # family -> value (the hottest, the lowest threshold)

    def add(self, name: str, value: float) -> None:
        if name in THRESHOLDS:
            if value > 0:  # 0: a GPU or vGPU that gives no threshold
                self.readings[name] = min(value, self.readings.get(name, value))
        else:
            self.readings[name] = max(value, self.readings.get(name, value))

    def limit(self, name: str) -> tuple[float, bool]:
        """The threshold and whether it is the H100 default."""
        if name in self.readings:
            return self.readings[name], False
        return H100_DEFAULTS[name], True


class Temperatures:
    """The temperature families of one snapshot, per host and GPU, judged once all are read."""

    def __init__(self) -> None:
        self._gpus: dict[tuple[str, int], _Gpu] = defaultdict(_Gpu)

    def add(self, host: str, gpu: int, name: str, value: float) -> None:
        self._gpus[(host, gpu)].add(name, value)

    def faults(self) -> Iterable[tuple[str, TemperatureFault]]:
        for (host, gpu), read in sorted(self._gpus.items()):
            yield from ((host, fault) for fault in _judge(gpu, read))


def _judge(gpu: int, read: _Gpu) -> list[TemperatureFault]:
    faults = []
    temp = read.readings.get(GPU_TEMP)
    if temp is not None:
        slowdown, slowdown_default = read.limit(SLOWDOWN_TEMP)
        shutdown, shutdown_default = read.limit(SHUTDOWN_TEMP)
        if shutdown <= slowdown:  # a default beside the GPU's own other threshold that contradicts it: not used
            if shutdown_default:
                shutdown = None
            elif slowdown_default:
                slowdown = None
        if shutdown is not None and temp >= shutdown - SHUTDOWN_MARGIN:
            faults.append(_fault(gpu, "critical", temp, NEAR_SHUTDOWN, shutdown, shutdown_default))
        elif slowdown is not None and temp >= slowdown:
            faults.append(_fault(gpu, "warning", temp, AT_SLOWDOWN, slowdown, slowdown_default))
    memory = read.readings.get(MEMORY_TEMP)
    if memory is not None:
        limit, defaulted = read.limit(MEMORY_MAX_TEMP)
        if memory >= limit:
            faults.append(_fault(gpu, "warning", memory, MEMORY_AT_MAX, limit, defaulted))
    return faults


def _fault(gpu: int, severity: str, temp: float, text: str, limit: float, defaulted: bool) -> TemperatureFault:
    message = text % {"gpu": gpu, "temp": f"{temp:g}", "limit": f"{limit:g}"}
    if defaulted:
        message += " " + DEFAULTED
    return TemperatureFault(gpu, severity, temp, message)


def _pattern(text: str) -> re.Pattern:
    body = re.escape(text)
    for name, value in (("gpu", r"\d+"), ("temp", r"-?[\d.e+]+"), ("limit", r"-?[\d.e+]+")):
        body = body.replace(re.escape(f"%({name})s"), f"(?P<{name}>{value})")
    return re.compile(body + "(?P<defaulted> " + re.escape(DEFAULTED) + ")?")


_PATTERNS = tuple((text, _pattern(text)) for text in _TEXTS)


def is_temperature(message: str) -> bool:
    """Whether a stored message is a temperature reading's (not the throttling counter's, of the same kind)."""
    return any(pattern.fullmatch(message) for _text, pattern in _PATTERNS)


def translated(message: str) -> str | None:
    """A stored temperature message said again in the active language (None: not one of them)."""
    for text, pattern in _PATTERNS:
        said = pattern.fullmatch(message)
        if said:
            words = _(text) % {"gpu": said["gpu"], "temp": said["temp"], "limit": said["limit"]}
            return f"{words} {_(DEFAULTED)}" if said["defaulted"] else words
    return None
