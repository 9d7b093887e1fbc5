"""The estimator against figures computed by hand."""

from datetime import date
from decimal import Decimal

import pytest

from tenants.capacity.estimate import Hardware, estimate

H100 = Hardware("p5.48xlarge", 8, 80, 989, Decimal("55.04"))
TRN1 = Hardware("trn1.32xlarge", 16, 32, 190, Decimal("21.50"))
UNPRICED = Hardware("p4de.24xlarge", 8, 80, 312, None)
JAN = dict(starts_on=date(2027, 1, 1), ends_on=date(2027, 1, 31))  # 31 days


def test_one_billion_parameters_on_20_2_billion_tokens():
    e = estimate(parameters=10**9, tokens=20_200_000_000, hardware=H100, instance_count=1, **JAN)
    assert e.training_flops == pytest.approx(1.212e20)
    # 1.212e20 / (989e12 × 0.40) s = 306,370.07 s = 85.1028 accelerator-hours, / 8 = 10.6378 instance-hours.
    assert e.accelerator_hours == pytest.approx(85.1028, rel=1e-5)
    assert e.instance_hours == pytest.approx(10.63785, rel=1e-5)
    assert e.days_needed == pytest.approx(0.443244, rel=1e-5)
    assert e.cost_usd == Decimal("585.51")  # 10.63785 h × 55.04 USD


def test_blank_tokens_default_to_compute_optimal_20_per_parameter():
    e = estimate(parameters=7 * 10**9, tokens=None, hardware=H100, instance_count=4, **JAN)
    assert e.tokens == 140 * 10**9
    assert e.tokens_defaulted
    assert e.training_flops == pytest.approx(6 * 7e9 * 140e9)


def test_training_state_sets_minimum_instances():
    # 70B × 16 B = 1,120e9 B = 1,043.1 GiB; one P5 holds 8 × 80 = 640 GiB → 2 instances.
    e = estimate(parameters=70 * 10**9, tokens=10**9, hardware=H100, instance_count=1, **JAN)
    assert e.training_state_gib == pytest.approx(1043.08, rel=1e-4)
    assert e.min_instances_for_state == 2
    assert not e.fits_memory
    assert not e.fits


def test_405b_on_trainium_needs_many_instances():
    # 405e9 × 16 B = 6,035 GiB; a Trn1 holds 16 × 32 = 512 GiB → 12 instances.
    e = estimate(parameters=405 * 10**9, tokens=10**9, hardware=TRN1, instance_count=12, **JAN)
    assert e.min_instances_for_state == 12
    assert e.fits_memory


def test_plan_that_does_not_fit_the_window():
    # 8B on 2T tokens at 40 % MFU: 9.6e22 FLOPs → 67,408 accelerator-h → 8,426 instance-h → 351 days on 1.
    e = estimate(parameters=8 * 10**9, tokens=2 * 10**12, hardware=H100, instance_count=1, **JAN)
    assert e.days_needed == pytest.approx(351.08, rel=1e-4)
    assert not e.fits_window
    e = estimate(parameters=8 * 10**9, tokens=2 * 10**12, hardware=H100, instance_count=16, **JAN)
    assert e.days_needed == pytest.approx(21.94, rel=1e-3)
    assert e.fits_window and e.fits


def test_a_plan_that_does_not_fit_says_how_many_instances_would():
    # 8,426 instance-h in a 31-day window (744 h): 11.33 → 12 instances finish in time, 11 do not.
    e = estimate(parameters=8 * 10**9, tokens=2 * 10**12, hardware=H100, instance_count=1, **JAN)
    assert e.instances_for_window == 12
    assert not estimate(parameters=8 * 10**9, tokens=2 * 10**12, hardware=H100, instance_count=11, **JAN).fits
    assert estimate(parameters=8 * 10**9, tokens=2 * 10**12, hardware=H100, instance_count=12, **JAN).fits
    # A tiny run is bounded below by its training state: 70B needs 2 P5 to hold it whatever the time.
    assert (
        estimate(parameters=70 * 10**9, tokens=10**9, hardware=H100, instance_count=1, **JAN).instances_for_window == 2
    )


def test_mfu_and_exchange_rate():
    e = estimate(
        parameters=10**9, tokens=20_200_000_000, hardware=H100, instance_count=1, mfu=Decimal("0.5"),
        exchange_rate=Decimal("150"), **JAN,
    )  # fmt: skip
    assert e.accelerator_hours == pytest.approx(85.1028 * 0.4 / 0.5, rel=1e-5)
    assert e.cost_local == (e.cost_usd * 150).quantize(Decimal("1"))
    # Holding one P5 for 31 days: 744 h × 55.04 = 40,949.76 USD.
    assert e.window_cost_usd == Decimal("40949.76")


def test_unpriced_hardware_has_no_cost():
    e = estimate(parameters=10**9, tokens=None, hardware=UNPRICED, instance_count=1, **JAN)
    assert e.cost_usd is None and e.window_cost_usd is None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"parameters": 0}, "parameters"),
        ({"instance_count": 0}, "instance_count"),
        ({"mfu": Decimal("1.5")}, "utilization"),
        ({"ends_on": date(2026, 12, 1)}, "ends before"),
    ],
)
def test_nonsense_inputs_are_refused(kwargs, message):
    args = dict(parameters=10**9, tokens=None, hardware=H100, instance_count=1, **JAN) | kwargs
    with pytest.raises(ValueError, match=message):
        estimate(**args)


def test_flops_for_display():
    e = estimate(parameters=10**9, tokens=20_200_000_000, hardware=H100, instance_count=1, **JAN)
    assert (round(e.flops_mantissa, 3), e.flops_exponent) == (1.212, 20)
