"""dcgm-exporter text, the Prometheus query shape, and the health rules applied to both."""

import contextlib
import json
import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from workloads.health.dcgm import (
    METRIC_RULES,
    XID_RULES,
    Action,
    GpuReading,
    Severity,
    classify,
    parse_exposition,
    prometheus_vector_pairs,
    sample_pairs,
    unsupported_fields,
    xid_rule,
)
from workloads.telemetry_errors import ParseError

SAMPLE = Path(__file__).parent.parent / "samples" / "dcgm_exporter_metrics_h100.txt"
SAMPLE_HOST = "cluster-tkr1341-ubu2204-1xh100-20c-np-lcqbg-49wfm-rhpj8"
HOST = "p5-dy-p5-1"


def series(name, gpu, value, host=HOST, **labels):
    """One exposition line as dcgm-exporter writes it."""
    labels = {
        "gpu": str(gpu),
        "UUID": f"GPU-{gpu:08d}",
        "device": f"nvidia{gpu}",
        "modelName": "NVIDIA H100 80GB HBM3",
        "Hostname": host,
        **labels,
    }
    return name + "{" + ",".join(f'{key}="{val}"' for key, val in labels.items()) + "} " + str(value) + "\n"


def node(host=HOST, gpus=range(8), xid=None, **extra):
    """A p5 node's exposition: temperature and Xid for every GPU, plus the faults given."""
    text = "# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).\n# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n"
    text += "".join(series("DCGM_FI_DEV_GPU_TEMP", gpu, 41, host) for gpu in gpus)
    text += "# HELP DCGM_FI_DEV_XID_ERRORS Value of the last XID error encountered.\n"
    text += "# TYPE DCGM_FI_DEV_XID_ERRORS gauge\n"
    xid = xid or {}
    text += "".join(
        series("DCGM_FI_DEV_XID_ERRORS", gpu, xid.get(gpu, 0), host, err_code=str(xid.get(gpu, 0))) for gpu in gpus
    )
    for name, values in extra.items():
        text += "".join(series(f"DCGM_FI_DEV_{name}", gpu, value, host) for gpu, value in values.items())
    return text


def pairs(*texts):
    """The samples of each node's exposition (one scrape each), as classify() takes them."""
    return [pair for text in texts for pair in sample_pairs(parse_exposition(text).samples)]


def readings(*texts, **kwargs):
    return classify(pairs(*texts), **kwargs)


def prometheus_number(value):
    """A sample value as Prometheus writes it in JSON: a string, "79" not "79.0", "NaN", "+Inf"."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return str(int(value)) if value.is_integer() else repr(value)


def as_query_result(*texts):
    """The same samples as Prometheus' /api/v1/query returns them: JSON, __name__, instance and job added."""
    result = [
        {
            "metric": {"__name__": s.name, **s.labels, "instance": f"10.1.0.{number}:9400", "job": "dcgm-exporter"},
            "value": [1795650000.123, prometheus_number(s.value)],
        }
        for number, text in enumerate(texts)
        for s in parse_exposition(text).samples
    ]
    return json.loads(json.dumps({"status": "success", "data": {"resultType": "vector", "result": result}}))


# -- The text format ------------------------------------------------------------------------------


def test_the_real_exporter_sample_parses():
    exposition = parse_exposition(SAMPLE.read_text())
    assert [s.name for s in exposition.samples] == [
        "DCGM_FI_DEV_SM_CLOCK",
        "DCGM_FI_DEV_MEMORY_TEMP",
        "DCGM_FI_DEV_GPU_UTIL",
        "DCGM_FI_DEV_XID_ERRORS",
        "DCGM_FI_DEV_FB_FREE",
        "DCGM_FI_DEV_FB_USED",
        "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
        "DCGM_FI_DEV_VGPU_LICENSE_STATUS",
    ]
    xid = exposition.samples[3]
    assert (xid.value, xid.timestamp_ms, xid.line_number) == (0.0, None, 18)
    assert xid.labels["err_msg"] == "No Error" and xid.labels["err_code"] == "0"
    assert xid.labels["Hostname"] == SAMPLE_HOST and xid.labels["gpu"] == "0"
    assert exposition.samples[0].value == 1755
    assert exposition.types["DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"] == "counter"
    assert exposition.help["DCGM_FI_DEV_XID_ERRORS"] == "Value of the last XID error encountered."


def test_the_samples_xid_0_is_no_fault():
    assert classify(sample_pairs(parse_exposition(SAMPLE.read_text()).samples)) == ()


def test_label_values_unescape_backslash_quote_and_newline():
    # The example from the format's specification (prometheus/docs exposition_formats.md).
    text = (
        'msdos_file_access_time_seconds{path="C:\\\\DIR\\\\FILE.TXT",error="Cannot find file:\\n\\"FILE.TXT\\""}'
        " 1.458255915e9\n"
    )
    (sample,) = parse_exposition(text).samples
    assert sample.labels == {"path": "C:\\DIR\\FILE.TXT", "error": 'Cannot find file:\n"FILE.TXT"'}
    assert sample.value == 1.458255915e9


def test_blanks_a_trailing_comma_and_empty_braces_are_allowed():
    text = 'a { x = "1" , y="2", } 3\nb{} 4\n\tc 5 \n'
    samples = parse_exposition(text).samples
    assert [(s.name, dict(s.labels), s.value) for s in samples] == [
        ("a", {"x": "1", "y": "2"}, 3),
        ("b", {}, 4),
        ("c", {}, 5),
    ]


def test_nan_infinities_and_timestamps():
    text = "a NaN\nb +Inf 1395066363000\nc -Inf -3982045\nd 1e-3\n"
    a, b, c, d = parse_exposition(text).samples
    assert math.isnan(a.value) and b.value == math.inf and c.value == -math.inf and d.value == 0.001
    assert (a.timestamp_ms, b.timestamp_ms, c.timestamp_ms) == (None, 1395066363000, -3982045)


def test_help_unescapes_backslash_and_newline_and_comments_are_ignored():
    text = "# a plain comment\n#\n# HELP m Line one\\nback\\\\slash \\t kept\n# TYPE m counter\nm 1\n"
    exposition = parse_exposition(text)
    assert exposition.help == {"m": "Line one\nback\\slash \\t kept"}
    assert exposition.types == {"m": "counter"}


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('m{a="open} 1\n', "line 1: the Prometheus text parser refuses 'm{a=\"open} 1'"),
        ("m{a=x} 1\n", "line 1: the Prometheus text parser refuses 'm{a=x} 1' (the labels cannot be read)"),
        ('x 1\nm{a="1",a="2"} 1\n', "line 2: the Prometheus text parser refuses"),
        ('m{1a="1"} 1\n', "line 1: the Prometheus text parser refuses"),
        ('m{a="1" b="2"} 1\n', "line 1: the Prometheus text parser refuses"),
        ("m\n", "line 1: the Prometheus text parser refuses 'm' (no valid metric name)"),
        (
            "# HELP m x\nm one\n",
            "line 2: the Prometheus text parser refuses 'm one' (the value is not a number)",
        ),
        ("m 1_000\n", "line 1: the Prometheus text parser refuses 'm 1_000' (the value is not a number)"),
        ("9m 1\n", "line 1: the Prometheus text parser refuses '9m 1' (no valid metric name)"),
        ("m-x 1\n", "line 1: the Prometheus text parser refuses"),
        ("# TYPE m gauge\n# TYPE m gauge\nm 1\n", "line 2: a second TYPE line for m"),
        ("# TYPE m meter\nm 1\n", "line 1: TYPE of m must be one of"),
        ("m 1\n# TYPE m gauge\n", "line 2: the TYPE line for m comes after its samples"),
        ("# HELP m a\n# HELP m b\n", "line 2: a second HELP line for m"),
        ("# HELP\n", "line 1: HELP must be followed by a metric name"),
        ('m{a="1"} 1\nn 2\nm{a="1"} 3\n', "line 3: m with these labels was already given on line 1"),
    ],
)
def test_malformed_expositions_are_refused_naming_the_line(text, problem):
    with pytest.raises(ParseError, match=problem.replace("(", r"\(").replace(")", r"\)")):
        parse_exposition(text)


def test_a_last_sample_without_its_line_feed_may_be_cut_and_is_refused():
    text = node(xid={3: 79})
    cut = text[: text.index(" 79\n") + 2]  # "... 7": the Xid lost a digit
    with pytest.raises(ParseError, match=r"line \d+: the last line does not end with a line feed"):
        parse_exposition(cut)
    assert parse_exposition(cut + "\n").samples  # the same text whole is fine


@given(st.text(st.characters(blacklist_categories=("Cs",)), max_size=30))
def test_any_label_value_escaped_as_the_format_says_reads_back_unchanged(value):
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    (sample,) = parse_exposition(f'm{{v="{escaped}"}} 1\n').samples
    assert sample.labels["v"] == value


# -- The rules ------------------------------------------------------------------------------------


def test_the_rule_tables_name_the_critical_xids_and_an_action_for_each():
    critical = {code for code, rule in XID_RULES.items() if rule.severity is Severity.CRITICAL}
    assert critical == {48, 64, 74, 79, 94, 95, 119, 120, 140, 143, 154}  # xid_catalog.csv
    assert 0 not in XID_RULES
    assert xid_rule(79).action is Action.REPLACE_NODE and "fallen off the bus" in xid_rule(79).name
    assert xid_rule(48).action is Action.RESET_GPU
    assert xid_rule(13).code is None and xid_rule(13).severity is Severity.WARNING
    assert all(rule.why and rule.condition and rule.message for rule in METRIC_RULES)


def test_xid_79_is_critical_and_the_node_is_replaced():
    (reading,) = readings(node(xid={3: 79}))
    assert reading == GpuReading(
        host=HOST,
        gpu=3,
        kind="xid",
        severity=Severity.CRITICAL,
        code=79,
        value=79.0,
        message="Xid 79 on GPU 3: GPU has fallen off the bus",
        action=Action.REPLACE_NODE,
    )


@pytest.mark.parametrize(
    ("code", "severity", "action"),
    [
        (48, Severity.CRITICAL, Action.RESET_GPU),
        (63, Severity.WARNING, Action.RESET_GPU),  # NVIDIA: IGNORE; the remap waits for a reset
        (64, Severity.CRITICAL, Action.REPLACE_NODE),
        (74, Severity.CRITICAL, Action.REBOOT_NODE),
        (92, Severity.WARNING, Action.MONITOR),
        (94, Severity.CRITICAL, Action.RESET_GPU),
        (95, Severity.CRITICAL, Action.RESET_GPU),
        (31, Severity.WARNING, Action.RESTART_JOB),
    ],
)
def test_each_xid_gets_its_rule(code, severity, action):
    (reading,) = readings(node(xid={0: code}))
    assert (reading.code, reading.gpu, reading.severity, reading.action) == (code, 0, severity, action)


def test_an_unlisted_xid_is_named_by_the_exporters_err_msg():
    text = series("DCGM_FI_DEV_XID_ERRORS", 2, 13, err_code="13", err_msg="Graphics Engine Exception")
    (reading,) = readings(text)
    assert reading.message == "Xid 13 on GPU 2: Graphics Engine Exception"


def test_an_xid_that_is_not_a_whole_number_is_refused():
    with pytest.raises(ParseError, match="must be an Xid code, found 79.5"):
        readings(series("DCGM_FI_DEV_XID_ERRORS", 0, 79.5))


def test_memory_error_counters():
    text = node(
        ECC_DBE_VOL_TOTAL={1: 2, 2: 0},
        ECC_DBE_AGG_TOTAL={1: 5},
        UNCORRECTABLE_REMAPPED_ROWS={4: 3},
        ROW_REMAP_FAILURE={5: 1, 6: 0},
        ROW_REMAP_PENDING={7: 1},
    )
    got = [(r.gpu, r.kind, r.severity, r.action, r.value) for r in readings(text)]
    assert got == [
        (1, "ecc_dbe_aggregate", Severity.WARNING, Action.MONITOR, 5),
        (1, "ecc_dbe_volatile", Severity.CRITICAL, Action.RESET_GPU, 2),
        (4, "remapped_rows_uncorrectable", Severity.WARNING, Action.MONITOR, 3),
        (5, "row_remap_failure", Severity.CRITICAL, Action.REPLACE_NODE, 1),
        (7, "row_remap_pending", Severity.WARNING, Action.RESET_GPU, 1),
    ]
    assert readings(text)[1].message == "GPU 1: 2 double-bit ECC errors since the driver loaded"


def test_seven_gpus_of_eight_reporting_is_a_missing_gpu():
    (reading,) = readings(node(gpus=[0, 1, 2, 3, 4, 6, 7]), expected_gpus=8)
    assert (reading.gpu, reading.kind, reading.severity, reading.action) == (
        5,
        "gpu_missing",
        Severity.CRITICAL,
        Action.REPLACE_NODE,
    )
    assert reading.message == "GPU 5 is not reporting (7 of 8 GPUs report)"
    assert readings(node(), expected_gpus=8) == ()
    assert readings(node(gpus=range(7))) == ()  # only checked when the caller says how many to expect


def test_an_index_outside_the_instances_range_does_not_stand_in_for_a_missing_one():
    got = readings(node(gpus=[0, 1, 2, 3, 4, 5, 9]), expected_gpus=8)
    assert [(r.gpu, r.value, r.message) for r in got] == [
        (6, 2.0, "GPU 6 is not reporting (6 of 8 GPUs report)"),
        (7, 2.0, "GPU 7 is not reporting (6 of 8 GPUs report)"),
    ]


def test_missing_gpus_are_counted_per_host():
    got = [(r.host, r.gpu) for r in readings(node("p5-dy-p5-1"), node("p5-dy-p5-2", gpus=range(6)), expected_gpus=8)]
    assert got == [("p5-dy-p5-2", 6), ("p5-dy-p5-2", 7)]


def test_two_scrapes_pasted_into_one_text_are_refused():
    with pytest.raises(ParseError, match="a second HELP line for DCGM_FI_DEV_GPU_TEMP"):
        parse_exposition(node("p5-dy-p5-1") + node("p5-dy-p5-2"))


# -- Throttling counters --------------------------------------------------------------------------

MINUTES_10 = 600.0
NS = 1e9


def test_one_scrape_of_a_throttling_counter_says_nothing():
    text = node(THERMAL_VIOLATION={0: 9e15}, POWER_VIOLATION={0: 9e15})
    assert readings(text) == ()


def test_throttling_is_judged_on_the_increase_over_the_window():
    before = node(THERMAL_VIOLATION={0: 5e12, 1: 5e12, 2: 5e12}, POWER_VIOLATION={3: 0, 4: 0})
    after = node(
        THERMAL_VIOLATION={0: 5e12 + 0.02 * MINUTES_10 * NS, 1: 5e12 + 0.005 * MINUTES_10 * NS, 2: 1e9},
        POWER_VIOLATION={3: 0.6 * MINUTES_10 * NS, 4: 0.3 * MINUTES_10 * NS},
    )
    got = readings(after, previous=pairs(before), window_seconds=MINUTES_10)
    assert [(r.gpu, r.kind, r.severity, r.action, round(r.value, 3)) for r in got] == [
        (0, "thermal_violation", Severity.WARNING, Action.REPLACE_NODE, 0.02),
        (3, "power_violation", Severity.WARNING, Action.MONITOR, 0.6),
    ]  # GPU 1: 0.5% is under the bar; GPU 2's counter went down (a reset) and counts from 0: 1 s in 10 min
    assert got[0].message == "GPU 0: throttled by heat 2% of the last 10 min"


def test_a_previous_snapshot_needs_its_window():
    with pytest.raises(ValueError, match="window_seconds"):
        readings(node(), previous=[])


# -- The same rules on Prometheus' query result ---------------------------------------------------


def test_text_and_a_prometheus_vector_give_the_same_readings():
    texts = (
        node("p5-dy-p5-1", xid={3: 79, 5: 13}, ECC_DBE_VOL_TOTAL={1: 2}),
        node("p5-dy-p5-2", gpus=range(7), xid={0: 48}),
    )
    from_text = readings(*texts, expected_gpus=8)
    from_query = classify(prometheus_vector_pairs(as_query_result(*texts)), expected_gpus=8)
    assert from_text == from_query
    assert [(r.host, r.gpu, r.kind, r.code) for r in from_query] == [
        ("p5-dy-p5-1", 1, "ecc_dbe_volatile", None),
        ("p5-dy-p5-1", 3, "xid", 79),
        ("p5-dy-p5-1", 5, "xid", 13),
        ("p5-dy-p5-2", 0, "xid", 48),
        ("p5-dy-p5-2", 7, "gpu_missing", None),
    ]


def test_a_query_answer_as_prometheus_sends_it():
    answer = """{"status":"success","data":{"resultType":"vector","result":[
      {"metric":{"__name__":"DCGM_FI_DEV_XID_ERRORS","DCGM_FI_DRIVER_VERSION":"580.95.05","Hostname":"p5-dy-p5-1",
                 "UUID":"GPU-00000003","device":"nvidia3","err_code":"79","err_msg":"GPU has fallen off the bus",
                 "gpu":"3","instance":"10.1.0.5:9400","job":"dcgm-exporter","modelName":"NVIDIA H100 80GB HBM3"},
       "value":[1795650000.123,"79"]},
      {"metric":{"__name__":"DCGM_FI_DEV_GPU_TEMP","Hostname":"p5-dy-p5-1","gpu":"3","instance":"10.1.0.5:9400",
                 "job":"dcgm-exporter"},
       "value":[1795650000.123,"45"]}]}}"""
    from_query = classify(prometheus_vector_pairs(json.loads(answer)))
    text = series("DCGM_FI_DEV_XID_ERRORS", 3, 79, err_code="79", err_msg="GPU has fallen off the bus")
    assert from_query == readings(text)
    assert [(r.host, r.gpu, r.code, r.action) for r in from_query] == [("p5-dy-p5-1", 3, 79, Action.REPLACE_NODE)]


def test_the_sample_gives_the_same_nothing_through_prometheus():
    payload = as_query_result(SAMPLE.read_text())
    assert payload["data"]["result"][3]["value"][1] == "0"
    assert classify(prometheus_vector_pairs(payload), expected_gpus=1) == ()


def test_without_hostname_the_instance_label_or_the_callers_host_names_the_node():
    bare = 'DCGM_FI_DEV_XID_ERRORS{gpu="0"} 79\n'
    assert readings(bare, default_host="p5-dy-p5-9")[0].host == "p5-dy-p5-9"
    pairs = [({"__name__": "DCGM_FI_DEV_XID_ERRORS", "gpu": "0", "instance": "10.1.0.5:9400"}, 79.0)]
    assert classify(pairs)[0].host == "10.1.0.5:9400"
    with pytest.raises(ParseError, match="neither a Hostname nor an instance label"):
        readings(bare)


def test_a_health_metric_without_a_gpu_index_is_refused():
    with pytest.raises(ParseError, match="needs a gpu label holding the GPU index, found 'all'"):
        classify([({"__name__": "DCGM_FI_DEV_XID_ERRORS", "gpu": "all", "Hostname": HOST}, 79.0)])


@pytest.mark.parametrize("family", ["DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"])
@pytest.mark.parametrize("value", [math.nan, math.inf])
def test_nan_is_refused_like_an_infinity(family, value):
    # DCGM says "no value" with its blanks, never NaN: a NaN is a broken exporter or a forged report.
    with pytest.raises(ParseError, match=f"{family} on GPU 0 (is|must be)"):
        classify([({"__name__": family, "gpu": "0", "Hostname": HOST}, value)])
    with pytest.raises(ParseError, match=f"line 1: {family} on GPU 0"):
        parse_exposition(f'{family}{{gpu="0",Hostname="{HOST}"}} {"NaN" if math.isnan(value) else "+Inf"}\n')


def test_a_series_the_portal_does_not_read_may_be_nan():
    assert classify([({"__name__": "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gpu": "0", "Hostname": HOST}, math.nan)]) == ()


@pytest.mark.parametrize("gpu", ["-1", "all", "256", "0x1", ""])
def test_a_gpu_label_that_is_no_index_is_refused_on_any_series(gpu):
    # Beside no real index, a "-1" would make all eight GPUs "missing": eight critical events from one bad label.
    samples = [({"__name__": "DCGM_FI_DEV_GPU_TEMP", "gpu": gpu, "Hostname": HOST}, 40.0)]
    with pytest.raises(ParseError, match="gpu label holding the GPU index|at most 255|names GPU 256, but the instance"):
        classify(samples, expected_gpus=8)


@pytest.mark.parametrize(
    ("payload", "problem"),
    [
        ({"status": "error", "errorType": "bad_data", "error": "parse error"}, "the Prometheus query failed: parse"),
        ({"status": "success", "data": {"resultType": "matrix", "result": []}}, "expected a vector result"),
        (
            {"status": "success", "data": {"resultType": "vector", "result": [{"metric": {}, "value": [1, 7]}]}},
            "result 0: value must be",
        ),
        (
            {"status": "success", "data": {"resultType": "vector", "result": [{"metric": {}, "value": [1, "x"]}]}},
            "result 0: 'x' is not a number",
        ),
        (
            {
                "status": "success",
                "data": {"resultType": "vector", "result": [{"metric": {"a": 1}, "value": [1, "1"]}]},
            },
            "result 0: metric must map label names to strings",
        ),
    ],
)
def test_a_failed_or_odd_query_result_is_refused(payload, problem):
    with pytest.raises(ParseError, match=problem):
        prometheus_vector_pairs(payload)


def test_an_empty_vector_is_no_readings():
    assert prometheus_vector_pairs({"status": "success", "data": {"resultType": "vector", "result": []}}) == []


# -- DCGM's blanks and the physical bounds ---------------------------------------------

INT64_NOT_SUPPORTED = "9223372036854775794"  # DCGM_INT64_BLANK + 2, as an older dcgm-exporter prints it


def sample_with(line_name, value):
    """The real exporter scrape with one more family, valued as given, on its GPU 0."""
    text = SAMPLE.read_text()
    labels = text.splitlines()[-1].split("{", 1)[1].split("}", 1)[0]
    return text + f"# TYPE {line_name} gauge\n{line_name}{{{labels}}} {value}\n"


@pytest.mark.parametrize(
    "value", [INT64_NOT_SUPPORTED, "9223372036854775792", "2147483634", "140737488355330", "9.223372036854776e+18"]
)
def test_a_dcgm_blank_is_no_reading_not_an_event(value):
    text = sample_with("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", value)
    got = pairs(text)
    assert classify(got) == ()
    assert unsupported_fields(got) == {(SAMPLE_HOST, 0): {"ecc_dbe_volatile"}}


def test_a_blank_xid_is_no_reading_not_a_refusal():
    text = SAMPLE.read_text().replace(
        'pod="cuda-75454ffb9f-jpwkc"} 0\n# HELP DCGM_FI_DEV_FB_FREE',
        f'pod="cuda-75454ffb9f-jpwkc"}} {INT64_NOT_SUPPORTED}\n# HELP DCGM_FI_DEV_FB_FREE',
    )
    assert INT64_NOT_SUPPORTED in text
    got = pairs(text)
    assert classify(got, expected_gpus=1) == ()
    assert unsupported_fields(got) == {(SAMPLE_HOST, 0): {"xid"}}


def test_blanks_through_prometheus_are_blanks_too():
    payload = as_query_result(node(ECC_DBE_VOL_TOTAL={2: INT64_NOT_SUPPORTED}))
    assert payload["data"]["result"][-1]["value"][1] == "9223372036854775808"  # a float64 in Prometheus
    got = prometheus_vector_pairs(payload)
    assert classify(got, expected_gpus=8) == ()
    assert unsupported_fields(got) == {(HOST, 2): {"ecc_dbe_volatile"}}


def test_a_real_count_beside_a_blank_is_still_read():
    got = readings(node(ECC_DBE_VOL_TOTAL={0: INT64_NOT_SUPPORTED, 1: 2}))
    assert [(r.gpu, r.kind, r.value) for r in got] == [(1, "ecc_dbe_volatile", 2.0)]


@pytest.mark.parametrize(
    ("family", "value", "problem"),
    [
        ("DCGM_FI_DEV_GPU_TEMP", "1e308", "DCGM_FI_DEV_GPU_TEMP on GPU 0 is 1e+308 °C: outside -40..150"),
        ("DCGM_FI_DEV_GPU_TEMP", "-273", "outside -40..150"),
        (
            "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
            "-1",
            "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL on GPU 0 is -1 errors: outside 0..1e+12",
        ),
        ("DCGM_FI_DEV_THERMAL_VIOLATION", "-5", "outside 0..1e+18"),
        ("DCGM_FI_DEV_POWER_USAGE", "1e9", "is 1e+09 W: outside 0..2000"),
        ("DCGM_FI_DEV_ROW_REMAP_FAILURE", "7", "outside 0..1"),
        ("DCGM_FI_DEV_GPU_TEMP", "+Inf", "is inf °C"),
    ],
)
def test_impossible_values_are_refused_naming_the_line(family, value, problem):
    text = sample_with(family, value)
    with pytest.raises(ParseError, match=r"line 32: .*" + problem.replace("+", r"\+").replace(".", r"\.")):
        parse_exposition(text)


def test_impossible_values_from_prometheus_are_refused_too():
    got = prometheus_vector_pairs(as_query_result(node(GPU_TEMP={})))
    got[0] = ({**got[0][0]}, 1e308)
    with pytest.raises(ParseError, match="DCGM_FI_DEV_GPU_TEMP on GPU 0 is 1e\\+308 °C: outside -40..150"):
        classify(got)


def test_a_gpu_index_far_beyond_the_instance_is_refused():
    assert readings(node(gpus=[*range(8), 15]), expected_gpus=8) == ()  # within the margin: read
    with pytest.raises(ParseError, match="names GPU 16, but the instance has 8 GPUs"):
        readings(node(gpus=[*range(8), 16]), expected_gpus=8)


def test_throttling_longer_than_the_window_is_refused():
    before = node(THERMAL_VIOLATION={0: 0})
    after = node(THERMAL_VIOLATION={0: int(3600 * 1e9)})  # an hour of throttling in ten minutes
    with pytest.raises(ParseError, match="cannot be throttled for longer than the time that passed"):
        readings(after, previous=pairs(before), window_seconds=600)


def test_a_counter_typed_family_keeps_its_name():
    text = "# TYPE DCGM_FI_DEV_THERMAL_VIOLATION counter\n" + series("DCGM_FI_DEV_THERMAL_VIOLATION", 0, 5)
    text += "# TYPE x_total counter\nx_total 1\n"
    assert [s.name for s in parse_exposition(text).samples] == ["DCGM_FI_DEV_THERMAL_VIOLATION", "x_total"]


def test_the_newer_exporters_hostname_label_names_the_node():
    text = node(xid={0: 79}).replace("Hostname=", "hostname=")
    assert {r.host for r in readings(text)} == {HOST}


@given(
    st.lists(
        st.one_of(
            st.sampled_from(
                ['m{gpu="0"} 1', "# TYPE m counter", "# HELP m x", 'DCGM_FI_DEV_GPU_TEMP{gpu="1"} 41', "m_total 2", ""]
            ),
            st.text(st.sampled_from('m{}="\\ ,#01eE+-.naIf_TYPE\t'), max_size=20),
        ),
        max_size=8,
    )
)
def test_any_text_is_read_or_refused_with_a_parse_error(lines):
    with contextlib.suppress(ParseError):  # a refusal is fine; any other exception would be a 500
        parse_exposition("\n".join(lines) + "\n")
