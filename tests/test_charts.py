"""The value axis of the portal's charts: labels that never print over each other (issue 16 item 8: a pool of 64
instances with 62 allocatable drew "62" across "64")."""

from hypothesis import given
from hypothesis import strategies as st

from portal.charts import Frame, ValueScale

LABEL_HEIGHT = 11  # px: the charts' tick font (.chart { font-size: 11px })


def test_an_allocatable_line_just_under_the_total_keeps_one_label():
    scale = ValueScale(Frame(), maximum=64)

    labels = [tick["label"] for tick in scale.ticks(marks=(62, 64))]
    assert labels == [0, 10, 20, 30, 40, 50, 62]  # the allocatable line is labelled; the total is in the legend


def test_a_short_chart_keeps_its_labels_apart_too():
    """The usage page's pool chart is 148 px tall: there 60 and 64 were 9 px apart."""
    scale = ValueScale(Frame(height=200, bottom=36), maximum=64)

    labels = [tick["label"] for tick in scale.ticks(marks=(64,))]
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
