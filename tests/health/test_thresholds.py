"""Incidents complete enough to act on: an Xid in dcgm-exporter's count family, and a GPU's temperature against its
own slowdown and shutdown temperatures. Real exporter output (tests/samples/SOURCES.md); every edit is named here."""

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.utils import translation

from tests.factories import ClusterFactory, ClusterNodeFactory
from workloads.health import polling, temperature
from workloads.health.dcgm import (
    XID_COUNT_METRIC,
    XID_METRIC,
    Action,
    Severity,
    classify,
    parse_exposition,
    sample_pairs,
)
from workloads.health.incidents import event_summary
from workloads.health.models import HealthEvent, PrometheusSource
from workloads.models import SupportCase

SAMPLES = Path(__file__).parent.parent / "samples"
XID_COUNT = (SAMPLES / "dcgm_exporter_xid_count_h100.txt").read_text()
T4 = (SAMPLES / "dcgm_exporter_thresholds_t4.txt").read_text()
H100_HOST = "cluster-tkr1341-ubu2204-1xh100-20c-np-lcqbg-49wfm-rhpj8"
GAUGE_ZERO = 'err_code="0",err_msg="No Error",namespace="default",pod="cuda-75454ffb9f-jpwkc"} 0\n'
GAUGE_79 = 'err_code="79",err_msg="GPU has fallen off the bus",namespace="default",pod="cuda-75454ffb9f-jpwkc"} 79\n'
T4_TEMP = 'DCGM_FI_PROCESS_NAME="/usr/bin/dcgm-exporter"} 25\n'  # the GPU_TEMP line's end (the Xid line ends in 0)
DEFAULT = " (H100 default: the exporter does not send this threshold)"


def read(text, **kwargs):
    return classify(sample_pairs(parse_exposition(text).samples), **kwargs)


def without(text, family):
    """The text without one family (its HELP, TYPE and samples): an exporter that does not send it."""
    return "".join(line for line in text.splitlines(keepends=True) if family + " " not in line + " "
                   and not line.startswith(family + "{"))  # fmt: skip


def t4_at(value: str, host: str = "424773df46e0") -> str:
    """The T4 sample with its one GPU temperature edited to `value` (and its Hostname to `host`)."""
    assert T4.count(T4_TEMP) == 1
    edited = T4.replace(T4_TEMP, T4_TEMP.replace("} 25", f"}} {value}"))
    return edited.replace('Hostname="424773df46e0"', f'Hostname="{host}"', 1)


# -- The Xid count family ---------------------------------------------------------------------------------------------


def test_an_xid_counted_only_is_the_event_the_gauge_would_make():
    counted = read(without(XID_COUNT, XID_METRIC))
    gauge = read(without(XID_COUNT, XID_COUNT_METRIC).replace(GAUGE_ZERO, GAUGE_79))
    assert len(counted) == 1 and counted == gauge
    (reading,) = counted
    assert (reading.host, reading.gpu, reading.kind, reading.code) == (H100_HOST, 0, "xid", 79)
    assert (reading.severity, reading.action) == (Severity.CRITICAL, Action.REPLACE_NODE)
    assert reading.message == "Xid 79 on GPU 0: GPU has fallen off the bus"


def test_the_sample_as_shipped_reads_the_counted_xid_beside_the_gauges_zero():
    (reading,) = read(XID_COUNT)
    assert (reading.gpu, reading.code, reading.severity) == (0, 79, Severity.CRITICAL)


def test_one_xid_in_both_families_is_one_reading():
    assert XID_COUNT.count(GAUGE_ZERO) == 1
    assert len(read(XID_COUNT.replace(GAUGE_ZERO, GAUGE_79))) == 1


def test_the_exporters_zero_series_and_a_count_fallen_to_zero_read_nothing():
    line = next(line for line in XID_COUNT.splitlines() if line.startswith(XID_COUNT_METRIC + "{"))
    no_xid = XID_COUNT.replace(line, line.replace(',xid="79"} 1', "} 0"))  # the exporter's series for "no Xid"
    assert read(no_xid) == ()
    assert read(XID_COUNT.replace(',xid="79"} 1', ',xid="79"} 0')) == ()


@pytest.mark.parametrize(("xid", "value"), [('"79"', "1.5"), ('"GPU"', "1")])
def test_a_count_that_is_no_count_or_an_xid_that_is_no_code_is_refused(xid, value):
    from workloads.telemetry_errors import ParseError

    with pytest.raises(ParseError):
        read(XID_COUNT.replace('xid="79"} 1', f"xid={xid}}} {value}"))


# -- Temperature --------------------------------------------------------------------------------------------------


def test_the_t4_sample_as_shipped_raises_nothing():
    # 424773df46e0: 25 °C against the H100 defaults; 551bdf382151: a slowdown temperature (93 °C) and no temperature.
    assert read(T4) == ()


@pytest.mark.parametrize(
    ("value", "severity", "message"),
    [
        ("88", None, None),
        ("89", Severity.WARNING, "GPU 0 at 89 °C: at or above its slowdown temperature, 89 °C" + DEFAULT),
        ("90", Severity.WARNING, "GPU 0 at 90 °C: at or above its slowdown temperature, 89 °C" + DEFAULT),
        ("91", Severity.CRITICAL, "GPU 0 at 91 °C: near its shutdown temperature, 92 °C" + DEFAULT),
        ("92", Severity.CRITICAL, "GPU 0 at 92 °C: near its shutdown temperature, 92 °C" + DEFAULT),
    ],
)
def test_a_temperature_without_exported_thresholds_is_judged_against_h100s(value, severity, message):
    readings = read(t4_at(value))
    if severity is None:
        assert readings == ()
        return
    (reading,) = readings
    assert (reading.host, reading.gpu, reading.kind, reading.code) == ("424773df46e0", 0, "thermal_violation", None)
    assert (reading.severity, reading.value, reading.message) == (severity, float(value), message)
    assert reading.action == Action.REPLACE_NODE


def test_the_gpus_own_slowdown_temperature_wins_over_the_default():
    # Edited: the temperature line moved to host 551bdf382151, whose exporter sends its slowdown temperature, 93 °C.
    assert read(t4_at("92", host="551bdf382151")) == ()  # critical against the H100 default: not against this GPU's
    (reading,) = read(t4_at("94", host="551bdf382151"))
    # Its own shutdown temperature is not sent, and the H100 default (92) is below its slowdown: no critical level.
    assert (reading.severity, reading.message) == (
        Severity.WARNING,
        "GPU 0 at 94 °C: at or above its slowdown temperature, 93 °C",
    )


def test_memory_over_its_maximum_operating_temperature_is_a_warning():
    memory = "# TYPE DCGM_FI_DEV_MEMORY_TEMP gauge\n" + 'DCGM_FI_DEV_MEMORY_TEMP{gpu="0",Hostname="424773df46e0"} %s\n'
    assert read(T4 + memory % "94") == ()
    (reading,) = read(T4 + memory % "95")
    assert reading.message == "GPU 0 memory at 95 °C: at or above its maximum operating temperature, 95 °C" + DEFAULT


def test_the_message_is_said_again_in_the_readers_language():
    message = "GPU 3 at 92 °C: near its shutdown temperature, 92 °C" + DEFAULT
    with translation.override("en"):
        assert temperature.translated(message) == message
    assert temperature.translated("GPU 3: throttled by heat 50% of the last 10 min") is None


# -- Events, cases and the Prometheus query ---------------------------------------------------------------------------


@pytest.fixture
def nodes(org, catalog):
    cluster = ClusterFactory(organization=org, name="g4-test", cloud_name="fmp-1-g4-test")
    # Not in the catalog: no GPU count to check, as for the samples' one-GPU hosts.
    ClusterNodeFactory(cluster=cluster, instance_id="i-0001", hostname="424773df46e0", instance_type="g4dn.xlarge")
    ClusterNodeFactory(cluster=cluster, instance_id="i-0002", hostname=H100_HOST, instance_type="g6.xlarge")
    ClusterNodeFactory(cluster=cluster, instance_id="i-0003", hostname="551bdf382151", instance_type="g4dn.xlarge")
    return cluster


def post(client, cluster, text):
    response = client.post(f"/api/v1/clusters/{cluster.pk}/health/ingest/", {"metrics": text}, format="json")
    assert response.status_code == 200, response.json()
    return response.json()


@pytest.mark.django_db
def test_a_counted_xid_and_the_gauge_make_one_event_and_one_case(member_api, nodes):
    assert post(member_api, nodes, XID_COUNT.replace(GAUGE_ZERO, GAUGE_79))["opened"] == 1
    (event,) = HealthEvent.objects.all()
    assert (event.instance_id, event.gpu, event.kind, event.code, event.severity) == ("i-0002", 0, "gpu_xid", 79,
                                                                                      "critical")  # fmt: skip
    (case,) = SupportCase.objects.all()
    assert case.severity == "s2" and event.case == case


@pytest.mark.django_db
def test_a_gpu_heating_up_opens_a_warning_then_a_critical_event_and_a_case(member_api, nodes):
    assert post(member_api, nodes, t4_at("90"))["opened"] == 1
    warning = HealthEvent.objects.get()
    assert (warning.kind, warning.severity, warning.case) == ("thermal_violation", "warning", None)
    post(member_api, nodes, t4_at("92"))
    warning.refresh_from_db()
    critical = HealthEvent.objects.get(resolved_at=None)
    assert warning.resolved_at is not None and critical.severity == "critical"
    assert critical.message == "GPU 0 at 92 °C: near its shutdown temperature, 92 °C" + DEFAULT
    (case,) = SupportCase.objects.all()
    assert case.severity == "s2" and "92 °C" in case.description
    assert event_summary(critical) == critical.message
    assert post(member_api, nodes, t4_at("90"))["opened"] == 0  # easing to slowdown keeps the critical event
    assert HealthEvent.objects.get(resolved_at=None) == critical
    assert post(member_api, nodes, T4)["resolved"] == 1  # 25 °C: normal again


@pytest.mark.django_db(transaction=True)
def test_prometheus_is_asked_for_the_new_families_and_they_open_events(prometheus, nodes):
    assert {XID_COUNT_METRIC, *temperature.FAMILIES} <= set(polling.FAMILIES)
    t0 = datetime(2026, 11, 20, 3, 0, tzinfo=UTC)
    minutes = [t0 + timedelta(minutes=i) for i in range(5)]
    server = prometheus(
        [
            (temperature.GPU_TEMP, {"Hostname": "424773df46e0", "gpu": "0"}, [(t, 92) for t in minutes]),
            (XID_COUNT_METRIC, {"Hostname": H100_HOST, "gpu": "0", "xid": "79", "window_size_in_ms": "300000"},
             [(t, 1) for t in minutes]),
        ]
    )  # fmt: skip
    source = PrometheusSource.objects.create(name="program AMP", url=server.url)
    polling.poll_source(source, now=t0 + 2 * timedelta(minutes=1))
    events = {(e.instance_id, e.kind, e.severity, e.code) for e in HealthEvent.objects.all()}
    assert events == {("i-0001", "thermal_violation", "critical", None), ("i-0002", "gpu_xid", "critical", 79)}
