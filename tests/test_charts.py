"""What every chart shares (portal.charts): tooltips with every series, a legend that wraps rather than hides
entries, an SVG export, reference lines inside the axis' range and labelled where they are drawn, all translated."""

from django.utils import translation
from hypothesis import given
from hypothesis import strategies as st

from portal import charts


def test_every_chart_has_an_axis_tooltip_a_legend_and_an_svg_export():
    option = charts.base_option(filename="pool-weeks")
    assert option["tooltip"]["trigger"] == "axis"  # one tooltip lists every series at the hovered point
    assert "legend" in option
    save = option["toolbox"]["feature"]["saveAsImage"]
    assert save["name"] == "pool-weeks" and save["title"] == "Save as SVG" and save["type"] == "svg"
    assert "legend" not in charts.base_option(filename="heatmap", legend=False)


def test_the_charts_texts_are_translated():
    with translation.override("ja"):
        title = charts.base_option(filename="x")["toolbox"]["feature"]["saveAsImage"]["title"]
    assert title != "Save as SVG" and title.isascii() is False


def test_a_reference_line_is_a_series_inside_the_axis_range_with_its_label():
    """ECharts rounds the axis to the data: a capacity drawn as a series of its own is inside the range (a mark
    line alone could fall above the axis' end), and its label says what it is where it is drawn."""
    line = charts.reference_line("capacity (pool total)", 64, 7, label="capacity 64", color=charts.TOTAL)
    assert line["data"] == [64] * 7
    assert line["markLine"]["data"] == [{"yAxis": 64}]
    assert line["markLine"]["label"]["formatter"] == "capacity 64"
    assert line["lineStyle"]["type"] == "dashed"
    total = charts.reference_line(
        "total", 64, 7, label="total 64", color=charts.TOTAL, position="insideEndTop", dashed=False
    )
    assert total["markLine"]["label"]["position"] == "insideEndTop" and total["lineStyle"]["type"] == "solid"


def test_the_legend_wraps_onto_rows_and_the_plot_moves_down_for_them():
    few = {"legend": {}, "grid": {"top": 36}, "series": [{"name": "allocated"}, {"name": "running"}]}
    many = {"legend": {}, "grid": {"top": 36}, "series": [{"name": "Hokuto Research Institute"} for _ in range(12)]}
    assert charts.fit_legend(few) == charts.LEGEND_ROW and few["grid"]["top"] == 36 + charts.LEGEND_ROW
    assert charts.fit_legend(many) >= 3 * charts.LEGEND_ROW
    assert charts.legend_rows(["北斗研究所" * 10] * 4) > charts.legend_rows(["Hokuto Res" * 5] * 4)  # wider letters


NAMES = st.builds(lambda n, japanese: ("組" if japanese else "o") * n, st.integers(1, 60), st.booleans())


@given(names=st.lists(NAMES, max_size=30), extra=NAMES)
def test_one_more_legend_entry_never_takes_fewer_rows(names, extra):
    assert 1 <= charts.legend_rows(names) <= charts.legend_rows([*names, extra])


def test_a_value_is_written_by_the_unit_the_server_gives():
    assert charts.unit(digits=2, suffix=" GB/s") == {"digits": 2, "prefix": "", "suffix": " GB/s"}
    chart = charts.Chart(key="k", label="l", option={}, height=200, columns=[], unit=charts.unit(prefix="$"))
    assert chart.id == "chart-k" and chart.payload == {"option": {}, "unit": {"digits": 0, "prefix": "$", "suffix": ""}}
