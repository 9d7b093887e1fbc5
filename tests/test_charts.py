"""The value axis of the portal's charts: labels that never print over each other (issue 16 item 8: a pool of 64
instances with 62 allocatable drew "62" across "64")."""

import math

from hypothesis import given
from hypothesis import strategies as st

from portal.charts import Frame, ValueScale, nice_ceiling, nice_step

LABEL_HEIGHT = 11  # px: the charts' tick font (.chart { font-size: 11px })


def test_an_allocatable_line_just_under_the_total_keeps_one_label():
    scale = ValueScale(Frame(), maximum=64)

    labels = [tick["value"] for tick in scale.ticks(marks=(62, 64))]
    assert labels == [0, 10, 20, 30, 40, 50, 62]  # the allocatable line is labelled; the total is in the legend


def test_a_short_chart_keeps_its_labels_apart_too():
    """The usage page's pool chart is 148 px tall: there 60 and 64 were 9 px apart."""
    scale = ValueScale(Frame(height=200, bottom=36), maximum=64)

    labels = [tick["value"] for tick in scale.ticks(marks=(64,))]
    assert 64 in labels and 60 not in labels


@given(
    maximum=st.integers(min_value=1, max_value=5000),
    marks=st.lists(st.integers(min_value=0, max_value=5000), max_size=3),
    height=st.integers(min_value=120, max_value=600),
)
def test_no_two_labels_overlap(maximum, marks, height):
    scale = ValueScale(Frame(height=height), maximum=maximum)

    ys = sorted(tick["y"] for tick in scale.ticks(marks=tuple(m for m in marks if m <= maximum)))
    assert all(lower - upper >= LABEL_HEIGHT for upper, lower in zip(ys, ys[1:], strict=False))


def test_ticks_are_round_numbers():
    """Issue 23 item 9: an axis up to 440 read 0/110/220/330/440; now 0, 100, 200, 300, 400."""
    scale = ValueScale(Frame(height=240), maximum=440)

    assert [tick["value"] for tick in scale.ticks(count=4)] == [0, 100, 200, 300, 400]
    assert [tick["label"] for tick in ValueScale(Frame(), maximum=2400).ticks(count=4)] == [
        "0", "500", "1,000", "1,500", "2,000",
    ]  # fmt: skip


@given(maximum=st.floats(min_value=0.01, max_value=1e7), count=st.integers(min_value=3, max_value=8))
def test_every_step_is_one_two_or_five_times_a_power_of_ten(maximum, count):
    step = nice_step(maximum / count)
    mantissa = step / 10 ** math.floor(math.log10(step))
    assert round(mantissa, 9) in (1, 2, 5)
    assert nice_ceiling(maximum, count=count) >= maximum * (1 - 1e-9)  # float rounding aside
