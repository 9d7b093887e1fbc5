"""The compute estimate shown beside every capacity request. Pure arithmetic, no database.

Training compute ≈ 6 × parameters × tokens FLOPs (forward + backward pass of a dense transformer).
A compute-optimal run uses ≈ 20 tokens per parameter (Chinchilla), used when tokens are left blank.
Mixed-precision training with Adam holds ≈ 16 bytes of state per parameter (BF16 weights and
gradients, FP32 master weights and two Adam moments) before activations: that sets the fewest
instances whose accelerator memory can hold the model at all.
"""

import math
from dataclasses import dataclass
from datetime import date
from decimal import Decimal

from django.core.exceptions import ValidationError
from django.utils.deconstruct import deconstructible
from django.utils.translation import gettext_lazy as _

FLOPS_PER_PARAMETER_TOKEN = 6
COMPUTE_OPTIMAL_TOKENS_PER_PARAMETER = 20
TRAINING_STATE_BYTES_PER_PARAMETER = 16
DEFAULT_MFU = Decimal("0.40")
GIB = 2**30
# Far beyond any real plan, and small enough that every figure stays finite and printable.
MAX_PARAMETERS = 10**14  # 100 trillion
MAX_TOKENS = 10**16  # 10 quadrillion
MAX_INSTANCES = 100_000
# A model (or a training run) under a million parameters (tokens) is not what this program funds; a count that
# small is almost always billions typed as a plain number ("parameter_count": 70 for a 70B model).
MIN_COUNT = 10**6


@deconstructible
class CountInUnits:
    """At least a million parameters or tokens, saying the unit and the likely intended value when below."""

    MESSAGES = {
        "parameters": (
            _("At least 1,000,000 parameters: the count is in parameters, not billions. Did you mean %(suggestion)s?"),
            _("At least 1,000,000 parameters."),
        ),
        "tokens": (
            _("At least 1,000,000 tokens: the count is in tokens, not billions. Did you mean %(suggestion)s?"),
            _("At least 1,000,000 tokens."),
        ),
    }

    # Declared the way Django's MinValueValidator declares its bound, so the OpenAPI schema reads it as the minimum
    # (portal.schema); not a subclass, which DRF would swap for its own min_value and lose the message.
    code = "min_value"
    limit_value = MIN_COUNT

    def __init__(self, unit: str) -> None:
        self.unit = unit

    def __call__(self, value) -> None:
        if value is None or value >= MIN_COUNT:
            return
        with_suggestion, plain = self.MESSAGES[self.unit]
        if value > 0:
            raise ValidationError(with_suggestion, code="min_value", params={"suggestion": f"{value * 10**9:,}"})
        raise ValidationError(plain, code="min_value")

    def __eq__(self, other) -> bool:
        return isinstance(other, CountInUnits) and other.unit == self.unit


RATE_LABELS = {
    "negotiated": _("negotiated rate"),
    "reserved": _("capacity block / reservation rate"),
    "on_demand": _("on-demand list price (rate card)"),
    "catalog": _("on-demand catalog price"),
}

PARAMETER_COUNT = CountInUnits("parameters")
TOKEN_COUNT = CountInUnits("tokens")


@dataclass(frozen=True)
class Hardware:
    api_name: str
    accelerators_per_instance: int
    accelerator_memory_gib: int
    peak_bf16_tflops: int
    usd_per_hour: Decimal | None  # the rate the program pays over the window; None: nothing prices it there
    # Which rate that is (tenants.capacity.pricing): a rate-card kind or "catalog", the day it took effect, whether
    # another takes over within the window; and the on-demand catalog price, shown beside it.
    rate_source: str = "catalog"
    rate_effective_from: date | None = None
    rate_changes: bool = False
    catalog_usd_per_hour: Decimal | None = None


@dataclass(frozen=True)
class Estimate:
    parameters: int
    tokens: int
    tokens_defaulted: bool  # True when tokens were left blank and set to 20 × parameters
    mfu: Decimal
    training_flops: float
    accelerator_hours: float
    instance_hours: float
    training_state_gib: float
    min_instances_for_state: int
    instance_count: int
    days_needed: float  # on instance_count instances, running around the clock
    window_days: int
    fits_window: bool
    fits_memory: bool
    cost_usd: Decimal | None  # of the training run
    cost_local: Decimal | None
    window_cost_usd: Decimal | None  # of holding instance_count instances over the whole window
    window_cost_local: Decimal | None
    usd_per_hour: Decimal | None = None  # the rate both costs are at
    rate_source: str = ""
    rate_effective_from: date | None = None
    rate_changes: bool = False
    catalog_usd_per_hour: Decimal | None = None
    catalog_cost_usd: Decimal | None = None  # the same run and window at the on-demand catalog price
    catalog_window_cost_usd: Decimal | None = None

    @property
    def fits(self) -> bool:
        return self.fits_window and self.fits_memory

    @property
    def rate_label(self) -> str:
        """Which rate the costs are at, in words."""
        return str(RATE_LABELS.get(self.rate_source, ""))

    @property
    def prices_differ(self) -> bool:
        """The rate card's price is not the catalog's: the catalog figure is worth showing beside."""
        return self.catalog_usd_per_hour is not None and self.catalog_usd_per_hour != self.usd_per_hour

    @property
    def instances_for_window(self) -> int:
        """The fewest instances that finish the run inside the window (and hold its training state)."""
        hours = self.window_days * 24
        return max(math.ceil(self.instance_hours / hours - 1e-9), self.min_instances_for_state, 1)

    @property
    def flops_exponent(self) -> int:
        return math.floor(math.log10(self.training_flops))

    @property
    def flops_mantissa(self) -> float:
        """Training FLOPs = flops_mantissa × 10^flops_exponent, for display."""
        return self.training_flops / 10**self.flops_exponent


def estimate(
    *,
    parameters: int,
    tokens: int | None,
    hardware: Hardware,
    instance_count: int,
    starts_on: date,
    ends_on: date,
    mfu: Decimal | None = None,
    exchange_rate: Decimal = Decimal("1"),
) -> Estimate:
    if not 0 < parameters <= MAX_PARAMETERS:
        raise ValueError(f"parameters must be between 1 and {MAX_PARAMETERS}")
    if tokens is not None and not 0 < tokens <= MAX_TOKENS:
        raise ValueError(f"tokens must be between 1 and {MAX_TOKENS}")
    if not 0 < instance_count <= MAX_INSTANCES:
        raise ValueError(f"instance_count must be between 1 and {MAX_INSTANCES}")
    if ends_on < starts_on:
        raise ValueError("the window ends before it starts")
    mfu = DEFAULT_MFU if mfu is None else Decimal(mfu)
    if not Decimal("0") < mfu <= Decimal("1"):
        raise ValueError("model FLOPs utilization must be in (0, 1]")
    tokens_defaulted = tokens is None
    tokens = COMPUTE_OPTIMAL_TOKENS_PER_PARAMETER * parameters if tokens is None else tokens

    training_flops = float(FLOPS_PER_PARAMETER_TOKEN) * parameters * tokens
    sustained_flops_per_accelerator = hardware.peak_bf16_tflops * 1e12 * float(mfu)
    accelerator_hours = training_flops / sustained_flops_per_accelerator / 3600
    instance_hours = accelerator_hours / hardware.accelerators_per_instance
    days_needed = instance_hours / instance_count / 24
    window_days = (ends_on - starts_on).days + 1

    state_bytes = TRAINING_STATE_BYTES_PER_PARAMETER * parameters
    instance_memory_bytes = hardware.accelerators_per_instance * hardware.accelerator_memory_gib * GIB
    min_instances = math.ceil(state_bytes / instance_memory_bytes)

    def money(hours: float, usd_per_hour: Decimal | None = hardware.usd_per_hour) -> tuple[Decimal | None, ...]:
        if usd_per_hour is None:
            return None, None
        usd = (Decimal(str(hours)) * usd_per_hour).quantize(Decimal("0.01"))
        return usd, (usd * exchange_rate).quantize(Decimal("1"))

    cost_usd, cost_local = money(instance_hours)
    window_cost_usd, window_cost_local = money(instance_count * window_days * 24)
    catalog_cost_usd = money(instance_hours, hardware.catalog_usd_per_hour)[0]
    catalog_window_cost_usd = money(instance_count * window_days * 24, hardware.catalog_usd_per_hour)[0]
    return Estimate(
        parameters=parameters,
        tokens=tokens,
        tokens_defaulted=tokens_defaulted,
        mfu=mfu,
        training_flops=training_flops,
        accelerator_hours=accelerator_hours,
        instance_hours=instance_hours,
        training_state_gib=state_bytes / GIB,
        min_instances_for_state=min_instances,
        instance_count=instance_count,
        days_needed=days_needed,
        window_days=window_days,
        fits_window=days_needed <= window_days,
        fits_memory=instance_count >= min_instances,
        cost_usd=cost_usd,
        cost_local=cost_local,
        window_cost_usd=window_cost_usd,
        window_cost_local=window_cost_local,
        usd_per_hour=hardware.usd_per_hour,
        rate_source=hardware.rate_source if hardware.usd_per_hour is not None else "",
        rate_effective_from=hardware.rate_effective_from,
        rate_changes=hardware.rate_changes,
        catalog_usd_per_hour=hardware.catalog_usd_per_hour,
        catalog_cost_usd=catalog_cost_usd,
        catalog_window_cost_usd=catalog_window_cost_usd,
    )
