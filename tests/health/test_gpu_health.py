"""GPU health end to end: DCGM exporter series read from a real Prometheus (and exporter text posted by a cluster)
become health events per node and GPU, and critical ones support cases the tenant sees and no other tenant does."""

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.test import Client
from rest_framework.test import APIClient

from portal.cloud.prometheus import query as prometheus_query
from tests.factories import ClusterFactory, ClusterNodeFactory, MembershipFactory, StaffRoleFactory
from workloads.health import polling
from workloads.health.dcgm import XID_METRIC
from workloads.health.models import HealthEvent, PrometheusSource
from workloads.models import CaseEvent, Cluster, SupportCase

pytestmark = pytest.mark.django_db(transaction=True)

T0 = datetime(2026, 11, 20, 3, 0, tzinfo=UTC)
MINUTE = timedelta(minutes=1)
SAMPLE = Path(__file__).parent.parent / "samples" / "dcgm_exporter_metrics_h100.txt"


def xid(host, gpu, *values):
    """An XID series: values every minute from T0."""
    return (XID_METRIC, {"Hostname": host, "gpu": str(gpu)}, [(T0 + i * MINUTE, v) for i, v in enumerate(values)])


def healthy(host, gpus=8, minutes=30):
    return [xid(host, gpu, *[0] * minutes) for gpu in range(gpus)]


@pytest.fixture
def lead(db):
    return StaffRoleFactory(role="support_engineer").user


@pytest.fixture
def cluster(org, lead, catalog):
    org.lead_engineer = lead
    org.save()
    cluster = ClusterFactory(organization=org, name="p5-train", cloud_name="fmp-1-p5-train")
    for n in (1, 2):
        ClusterNodeFactory(cluster=cluster, instance_id=f"i-000{n}", hostname=f"ip-10-1-0-{n}.ec2.internal")
    return cluster


def source(**fields):
    return PrometheusSource.objects.create(name="program AMP", url=fields.pop("url"), **fields)


def test_an_xid_from_prometheus_opens_one_case_adds_to_it_and_clears(prometheus, cluster, org, member, outsider):
    series = [
        # GPU 3 of node 1 falls off the bus at minute 5 and is back to 0 (exporter restarted) at minute 20.
        xid("ip-10-1-0-1", 3, *[0] * 5, *[79] * 15, *[0] * 10),
        # Node 2's GPU 1 gets a double-bit ECC Xid at minute 10, cleared at minute 20 too.
        xid("ip-10-1-0-2", 1, *[0] * 10, *[48] * 10, *[0] * 10),
        *[xid("ip-10-1-0-1", g, *[0] * 30) for g in (0, 1, 2, 4, 5, 6, 7)],
        *[xid("ip-10-1-0-2", g, *[0] * 30) for g in (0, 2, 3, 4, 5, 6, 7)],
    ]
    server = prometheus(series)
    amp = source(url=server.url)

    polling.poll_source(amp, now=T0 + 2 * MINUTE)
    assert not HealthEvent.objects.exists() and not SupportCase.objects.exists()

    polling.poll_source(amp, now=T0 + 6 * MINUTE)
    polling.poll_source(amp, now=T0 + 7 * MINUTE)  # read again: nothing new
    (event,) = HealthEvent.objects.all()
    assert (event.instance_id, event.gpu, event.kind, event.code) == ("i-0001", 3, "gpu_xid", 79)
    assert event.severity == "critical" and event.source == "prometheus" and event.resolved_at is None
    (case,) = SupportCase.objects.all()
    assert (case.organization, case.cluster, case.category, case.severity) == (org, cluster, "node_health", "s2")
    assert case.opened_by is None  # the portal opened it, as "system"
    assert "i-0001" in case.description and "GPU 3" in case.description and "Xid 79" in case.description
    assert "batch-replace-cluster-nodes --cluster-name fmp-1-p5-train --node-ids i-0001" in case.description
    assert event.case == case
    cluster.refresh_from_db()

    polling.poll_source(amp, now=T0 + 11 * MINUTE)  # node 2's Xid 48: the same cluster's open case
    assert SupportCase.objects.count() == 1
    comment = CaseEvent.objects.filter(case=case, kind="comment").get()
    assert "i-0002" in comment.body and "Xid 48" in comment.body and comment.actor is None
    assert HealthEvent.objects.filter(resolved_at=None).count() == 2

    polling.poll_source(amp, now=T0 + 21 * MINUTE)  # both back to 0
    assert HealthEvent.objects.filter(resolved_at=None).count() == 0
    assert SupportCase.objects.get().status == "open"  # stays for a person to close
    added, cleared = [e.body for e in CaseEvent.objects.filter(case=case, kind="comment").order_by("pk")]
    assert cleared.startswith("Condition cleared") and "i-0001, GPU 3" in cleared and "i-0002, GPU 1" in cleared

    # The tenant sees its case, in the API and the page; another tenant gets a 404.
    for user, status in ((member, 200), (outsider, 404)):
        api = APIClient()
        api.force_authenticate(user)
        assert api.get(f"/api/v1/support-cases/{case.pk}/").status_code == status
        page = Client()
        page.force_login(user)
        assert page.get(f"/support/{case.pk}/").status_code == status


def test_the_assigned_engineer_is_notified_of_the_incident(prometheus, cluster, lead, mailoutbox, eager_celery):
    server = prometheus([xid("ip-10-1-0-1", 0, 79, 79, 79)])
    polling.poll_source(source(url=server.url), now=T0 + MINUTE)
    assert any(lead.email in message.to for message in mailoutbox)


def test_a_gpu_missing_from_a_node_is_critical_and_a_silent_exporter_a_warning(prometheus, cluster):
    server = prometheus(healthy("ip-10-1-0-1", gpus=7))  # GPU 7 of node 1 is not reporting; node 2 says nothing
    polling.poll_source(source(url=server.url), now=T0 + 2 * MINUTE)
    missing = HealthEvent.objects.get(kind="gpu_missing")
    assert (missing.instance_id, missing.gpu, missing.severity) == ("i-0001", 7, "critical")
    silent = HealthEvent.objects.get(kind="exporter_silent")
    assert (silent.instance_id, silent.gpu, silent.severity) == ("i-0002", None, "warning")


def test_the_thermal_counter_is_judged_on_its_increase(prometheus, cluster):
    throttled = [(T0 + i * MINUTE, i * 30e9) for i in range(30)]  # 30 s of every minute: half the time
    server = prometheus(
        [*healthy("ip-10-1-0-1"), *healthy("ip-10-1-0-2"),
         ("DCGM_FI_DEV_THERMAL_VIOLATION", {"Hostname": "ip-10-1-0-1", "gpu": "2"}, throttled, "counter")]
    )  # fmt: skip
    polling.poll_source(source(url=server.url), now=T0 + 20 * MINUTE)
    event = HealthEvent.objects.get(kind="thermal_violation")
    assert (event.instance_id, event.gpu, event.severity) == ("i-0001", 2, "warning")
    assert "50%" in event.message
    assert not SupportCase.objects.exists()  # a warning shows on the board; it opens no case
    cluster.refresh_from_db()
    assert cluster.status == "in_service"


def test_a_program_wide_source_tells_two_orgs_same_address_apart_by_the_cluster_label(prometheus, cluster, other_org):
    theirs = ClusterFactory(organization=other_org, name="their-p5", cloud_name="fmp-2-their-p5")
    ClusterNodeFactory(cluster=theirs, instance_id="i-9999", hostname="ip-10-1-0-1")  # the same private address
    labelled = [
        (XID_METRIC, {"Hostname": "ip-10-1-0-1", "gpu": str(gpu), "cluster": "fmp-2-their-p5"},
         [(T0, 79 if gpu == 0 else 0), (T0 + MINUTE, 79 if gpu == 0 else 0)])
        for gpu in range(8)
    ]  # fmt: skip
    unlabelled = (XID_METRIC, {"Hostname": "ip-10-1-0-1", "gpu": "5"}, [(T0, 79), (T0 + MINUTE, 79)])
    server = prometheus([*labelled, unlabelled])
    amp = source(url=server.url)
    polling.poll_source(amp, now=T0 + MINUTE)
    (event,) = HealthEvent.objects.all()
    assert (event.cluster, event.instance_id, event.gpu) == (theirs, "i-9999", 0)
    amp.refresh_from_db()
    assert amp.unmatched_hosts == ["ip-10-1-0-1 (2 clusters)"]  # ambiguous without the label: not guessed


def test_an_org_source_reads_only_its_org_s_clusters(prometheus, cluster, other_org):
    theirs = ClusterFactory(organization=other_org)
    ClusterNodeFactory(cluster=theirs, instance_id="i-9999", hostname="ip-10-9-0-1")
    server = prometheus([xid("ip-10-9-0-1", 0, 79, 79)])
    polling.poll_source(source(url=server.url, organization=cluster.organization), now=T0 + MINUTE)
    assert not HealthEvent.objects.exists()


def test_a_prometheus_that_fails_leaves_events_and_says_why(cluster):
    amp = source(url="http://127.0.0.1:9")  # nothing listens on the discard port
    polling.poll_source(amp, now=T0)
    amp.refresh_from_db()
    assert amp.last_error and amp.last_polled_at == T0
    assert not HealthEvent.objects.exists()


# --- Exporter text posted by a cluster without Prometheus -----------------------------------------------------------


def post_metrics(client, cluster, text, host="ip-10-1-0-1"):
    return client.post(f"/api/v1/clusters/{cluster.pk}/health/ingest/", {"metrics": text, "host": host}, format="json")


def exporter_text(values: dict[int, int], host: str | None = "ip-10-1-0-1") -> str:
    """A node's XID series for its 8 GPUs: 0 unless `values` says otherwise."""
    where = f',Hostname="{host}"' if host else ""
    lines = ["# TYPE DCGM_FI_DEV_XID_ERRORS gauge"]
    lines += [f'DCGM_FI_DEV_XID_ERRORS{{gpu="{gpu}"{where}}} {values.get(gpu, 0)}' for gpu in range(8)]
    return "\n".join(lines) + "\n"


def test_posted_exporter_text_opens_and_resolves_events(member_api, cluster):
    response = post_metrics(member_api, cluster, exporter_text({3: 79}))
    assert response.status_code == 200, response.json()
    assert response.json() == {"readings": 1, "opened": 1, "resolved": 0, "nodes": 1}
    assert post_metrics(member_api, cluster, exporter_text({3: 79})).json()["opened"] == 0  # read again: no new
    assert HealthEvent.objects.get().source == "push"
    assert post_metrics(member_api, cluster, exporter_text({})).json()["resolved"] == 1


def test_the_real_exporter_sample_parses_and_names_its_host(member_api, cluster):
    # The sample's Hostname is a Kubernetes pod name the cluster does not have: a 400 naming it, nothing kept.
    response = post_metrics(member_api, cluster, SAMPLE.read_text(), host="")
    assert response.status_code == 400
    assert "cluster-tkr1341" in response.json()["host"][0]
    node = cluster.nodes.get(instance_id="i-0001")
    node.hostname = "cluster-tkr1341-ubu2204-1xh100-20c-np-lcqbg-49wfm-rhpj8"
    node.save()
    response = post_metrics(member_api, cluster, SAMPLE.read_text(), host="")
    assert response.status_code == 200, response.json()
    # One vGPU on a node whose type has 8: GPUs 1-7 are not reporting.
    assert set(HealthEvent.objects.values_list("kind", "gpu")) == {("gpu_missing", g) for g in range(1, 8)}


def test_a_malformed_exporter_line_is_a_400_naming_it_and_keeps_nothing(member_api, cluster):
    text = exporter_text({0: 79}) + 'DCGM_FI_DEV_XID_ERRORS{gpu="1",Hostname="ip-10-1-0-1"} seventy\n'
    response = post_metrics(member_api, cluster, text)
    assert response.status_code == 400
    assert response.json() == {
        "metrics": [
            "line 10: the Prometheus text parser refuses "
            '\'DCGM_FI_DEV_XID_ERRORS{gpu="1",Hostname="ip-10-1-0-1"} seventy\' (the value is not a number)'
        ]
    }
    assert not HealthEvent.objects.exists() and not SupportCase.objects.exists()


def test_a_cut_exporter_text_is_refused(member_api, cluster):
    response = post_metrics(member_api, cluster, exporter_text({0: 79}).rstrip("\n"))
    assert response.status_code == 400
    assert "cut off" in response.json()["metrics"][0]


def test_a_slurm_node_name_reaches_its_node_through_the_reporters_map(member_api, cluster):
    Cluster.objects.filter(pk=cluster.pk).update(slurm_nodes={"queue1-st-p5-2": "10.1.0.2"})
    cluster.refresh_from_db()
    text = exporter_text({0: 95}, host=None)
    assert post_metrics(member_api, cluster, text, host="queue1-st-p5-2").status_code == 200
    assert HealthEvent.objects.get().instance_id == "i-0002"


def test_pushed_throttling_is_judged_against_the_previous_post(member_api, cluster):
    def thermal(ns):
        counter = f'# TYPE DCGM_FI_DEV_THERMAL_VIOLATION counter\nDCGM_FI_DEV_THERMAL_VIOLATION{{gpu="0"}} {ns}\n'
        return exporter_text({}, host=None) + counter

    assert post_metrics(member_api, cluster, thermal(0)).json()["opened"] == 0  # one snapshot says nothing
    node = cluster.nodes.get(instance_id="i-0001")
    node.gpu_counters["at"] -= 600  # as if posted ten minutes ago
    node.save()
    assert post_metrics(member_api, cluster, thermal(300e9)).json()["opened"] == 1  # 300 s of 600: half the time
    assert HealthEvent.objects.get().kind == "thermal_violation"


def test_another_orgs_member_cannot_post_health(cluster, outsider):
    client = APIClient()
    client.force_authenticate(outsider)
    assert post_metrics(client, cluster, exporter_text({0: 79})).status_code == 404
    assert not HealthEvent.objects.exists()


def test_a_tenant_reads_its_own_health_events_only(member_api, cluster, other_org):
    post_metrics(member_api, cluster, exporter_text({0: 79}))
    theirs = ClusterFactory(organization=other_org)
    HealthEvent.objects.create(organization=other_org, cluster=theirs, instance_id="i-x", kind="gpu_xid",
                               severity="critical", observed_at=T0)  # fmt: skip
    rows = member_api.get("/api/v1/health-events/", {"open": "true"}).json()["results"]
    assert [(r["instance_id"], r["gpu"], r["code"]) for r in rows] == [("i-0001", 0, 79)]
    assert member_api.get("/api/v1/health-events/", {"cluster": theirs.pk}).status_code == 400
    outsider_client = APIClient()
    outsider_client.force_authenticate(MembershipFactory(organization=other_org).user)
    assert (
        outsider_client.get(f"/api/v1/health-events/{HealthEvent.objects.get(instance_id='i-0001').pk}/").status_code
        == 404
    )


def test_an_xid_series_without_its_gpu_label_is_a_400_not_a_crash(member_api, cluster):
    text = '# TYPE DCGM_FI_DEV_XID_ERRORS gauge\nDCGM_FI_DEV_XID_ERRORS{Hostname="ip-10-1-0-1"} 79\n'
    response = post_metrics(member_api, cluster, text)
    assert response.status_code == 400
    assert "gpu label" in response.json()["metrics"][0]
    assert not HealthEvent.objects.exists()


def test_one_nodes_malformed_series_in_prometheus_never_stops_the_others(prometheus, cluster):
    bad = (XID_METRIC, {"Hostname": "ip-10-1-0-2"}, [(T0, 79), (T0 + MINUTE, 79)])  # no gpu label
    server = prometheus([xid("ip-10-1-0-1", 0, 79, 79), *[xid("ip-10-1-0-1", g, 0, 0) for g in range(1, 8)], bad])
    amp = source(url=server.url)
    polling.poll_source(amp, now=T0 + MINUTE)
    assert HealthEvent.objects.get(kind="gpu_xid").instance_id == "i-0001"
    amp.refresh_from_db()
    assert any("gpu label" in host for host in amp.unmatched_hosts) and amp.last_error == ""


def test_the_board_names_the_programs_prometheus_to_the_tenant(member_client, cluster):
    source(url="http://prometheus.example:9090", last_polled_at=T0)
    response = member_client.get(f"/clusters/{cluster.pk}/health/")
    assert "Prometheus “program AMP”" in response.text


# --- What the review found: reads that must neither crash nor invent or clear conditions ----------------------------


def test_two_series_of_one_gpu_are_one_event_the_worst_of_them(prometheus, cluster):
    """Two scrape jobs (or a Prometheus pair) give the same GPU twice with different values."""
    series = [
        *[xid(host, g, 0, 0) for host in ("ip-10-1-0-1", "ip-10-1-0-2") for g in range(8)],
        (XID_METRIC, {"Hostname": "ip-10-1-0-1", "gpu": "3", "job": "dcgm-b"}, [(T0, 48), (T0 + MINUTE, 48)]),
        (XID_METRIC, {"Hostname": "ip-10-1-0-1", "gpu": "3", "job": "dcgm-c"}, [(T0, 79), (T0 + MINUTE, 79)]),
        ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", {"Hostname": "ip-10-1-0-1", "gpu": "2", "job": "a"}, [(T0, 1)]),
        ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", {"Hostname": "ip-10-1-0-1", "gpu": "2", "job": "b"}, [(T0, 2)]),
    ]
    amp = source(url=prometheus(series).url)
    polling.poll_source(amp, now=T0 + MINUTE)
    polling.poll_source(amp, now=T0 + MINUTE)
    events = sorted(HealthEvent.objects.values_list("gpu", "kind", "code"))
    assert events == [(2, "ecc_dbe_volatile", None), (3, "gpu_xid", 79)]
    assert SupportCase.objects.count() == 1


def test_posted_text_with_one_gpu_twice_is_one_event(member_api, cluster):
    text = exporter_text({}) + 'DCGM_FI_DEV_XID_ERRORS{gpu="02",Hostname="ip-10-1-0-1"} 79\n'
    response = post_metrics(member_api, cluster, text)
    assert response.status_code == 200, response.json()
    assert list(HealthEvent.objects.values_list("gpu", "code")) == [(2, 79)]


def test_a_node_missing_from_one_poll_keeps_its_events_and_its_case_hears_nothing(prometheus, cluster):
    node2 = [xid("ip-10-1-0-2", g, *[0] * 30) for g in range(8)]
    # Node 1's GPU 3 has Xid 79 throughout, but its series are missing from minute 7 to minute 12.
    gap = [(T0 + i * MINUTE, 79) for i in (*range(0, 2), *range(13, 30))]
    node1 = [(XID_METRIC, {"Hostname": "ip-10-1-0-1", "gpu": str(g)}, [(t, 79 if g == 3 else 0) for t, _v in gap])
             for g in range(8)]  # fmt: skip
    amp = source(url=prometheus([*node1, *node2]).url)
    polling.poll_source(amp, now=T0 + MINUTE)
    polling.poll_source(amp, now=T0 + 9 * MINUTE)  # node 1 said nothing: silent, not healthy
    assert HealthEvent.objects.get(kind="gpu_xid").resolved_at is None
    assert HealthEvent.objects.get(kind="exporter_silent").resolved_at is None
    polling.poll_source(amp, now=T0 + 14 * MINUTE)  # back: the same Xid, not a new one
    assert HealthEvent.objects.filter(kind="gpu_xid").count() == 1
    assert HealthEvent.objects.get(kind="exporter_silent").resolved_at is not None
    case = SupportCase.objects.get()
    assert not CaseEvent.objects.filter(case=case, kind="comment").exists()  # no "cleared", no second "opened"


def test_a_scrape_posted_again_at_once_leaves_throttling_as_it_was(member_api, cluster):
    def thermal(ns):
        counter = f'# TYPE DCGM_FI_DEV_THERMAL_VIOLATION counter\nDCGM_FI_DEV_THERMAL_VIOLATION{{gpu="0"}} {ns}\n'
        return exporter_text({}, host=None) + counter

    post_metrics(member_api, cluster, thermal(0))
    node = cluster.nodes.get(instance_id="i-0001")
    node.gpu_counters["at"] -= 600
    node.save()
    assert post_metrics(member_api, cluster, thermal(300e9)).json()["opened"] == 1
    again = post_metrics(member_api, cluster, thermal(300e9)).json()  # the reporter's retry, seconds later
    assert (again["opened"], again["resolved"]) == (0, 0)
    assert HealthEvent.objects.get().resolved_at is None


def test_an_empty_exporter_text_is_refused_and_clears_nothing(member_api, cluster):
    post_metrics(member_api, cluster, exporter_text({3: 79}))
    response = post_metrics(member_api, cluster, "")
    assert response.status_code == 400 and "no samples" in response.json()["metrics"][0]
    assert HealthEvent.objects.get().resolved_at is None


@pytest.mark.parametrize(
    ("line_text", "says"),
    [
        (
            'DCGM_FI_DEV_XID_ERRORS{gpu="70000",Hostname="ip-10-1-0-1"} 79\n',
            "names GPU 70000, but the instance has 8 GPUs",
        ),
        ('DCGM_FI_DEV_XID_ERRORS{gpu="9",Hostname="ip-10-1-0-1"} 1e30\n', "must be an Xid code"),
    ],
)
def test_exporter_values_no_column_can_hold_are_400s(member_api, cluster, line_text, says):
    response = post_metrics(member_api, cluster, exporter_text({}) + line_text)
    assert response.status_code == 400 and says in response.json()["metrics"][0]
    assert not HealthEvent.objects.exists()


def test_an_infinite_counter_or_a_nan_is_refused(member_api, cluster):
    # No GPU is throttled for ever: like a temperature of 1e308, a 400 naming the line, nothing kept.
    text = exporter_text({0: 79}) + 'DCGM_FI_DEV_THERMAL_VIOLATION{gpu="0",Hostname="ip-10-1-0-1"} +Inf\n'
    response = post_metrics(member_api, cluster, text)
    assert response.status_code == 400
    assert response.json()["metrics"][0].startswith("line 10: DCGM_FI_DEV_THERMAL_VIOLATION on GPU 0 is inf ns")
    assert not HealthEvent.objects.exists()
    text = exporter_text({}) + 'DCGM_FI_DEV_THERMAL_VIOLATION{gpu="0",Hostname="ip-10-1-0-1"} NaN\n'
    response = post_metrics(member_api, cluster, text)
    assert response.status_code == 400  # DCGM says "no value" with its blanks, never NaN
    assert response.json()["metrics"][0].startswith("line 10: DCGM_FI_DEV_THERMAL_VIOLATION on GPU 0 is NaN")
    assert cluster.nodes.get(instance_id="i-0001").gpu_counters == {}


def test_a_gpu_label_of_minus_one_opens_nothing(member_api, cluster):
    text = 'DCGM_FI_DEV_GPU_TEMP{gpu="-1",Hostname="ip-10-1-0-1"} 40\n'
    response = post_metrics(member_api, cluster, text)
    assert response.status_code == 400 and "gpu label holding the GPU index" in response.json()["metrics"][0]
    assert not HealthEvent.objects.exists()


def test_one_failing_source_never_stops_the_others(prometheus, cluster):
    # Node 1's GPU 0 has an Xid 79; node 2 is healthy (it reports, so it is not silent either).
    server = prometheus([*[xid("ip-10-1-0-1", g, 79 if g == 0 else 0, 0) for g in range(8)], *healthy("ip-10-1-0-2")])
    # Sources are polled in name order: the broken one first, so without poll_all's protection its error would end
    # the poll before the good source is read.
    bad = PrometheusSource.objects.create(name="a broken workspace", url="http://broken.invalid:9090")
    good = source(url=server.url)
    assert list(PrometheusSource.objects.values_list("pk", flat=True)) == [bad.pk, good.pk]

    def query(endpoint, promql, *, at, **kwargs):
        if endpoint.url == bad.url:
            # Not a CloudError or ParseError: poll_source lets it through, only poll_all's `except Exception` stops it.
            raise RuntimeError("boom")
        return prometheus_query(endpoint, promql, at=at, **kwargs)  # the good source: the real client, real server

    assert polling.poll_all(now=T0, query=query) == {"sources": 1, "opened": 1, "resolved": 0}
    (event,) = HealthEvent.objects.all()  # the good source's Xid 79 on GPU 0 of node 1
    assert (event.instance_id, event.gpu, event.kind, event.code) == ("i-0001", 0, "gpu_xid", 79)
    assert event.case is not None
    bad.refresh_from_db()
    good.refresh_from_db()
    assert bad.last_error == "RuntimeError: boom" and bad.last_polled_at == T0
    assert good.last_error == "" and good.last_polled_at == T0


def test_open_must_be_true_or_false(member_api):
    assert member_api.get("/api/v1/health-events/", {"open": "maybe"}).status_code == 400


def test_a_tenant_sees_that_a_source_fails_not_why(member_client, support_client, cluster):
    source(url="http://prometheus.internal:9090", last_error="Could not connect to Prometheus at http://prometheus")
    assert "prometheus.internal" not in member_client.get(f"/clusters/{cluster.pk}/health/").text
    assert "Could not connect" in support_client.get(f"/clusters/{cluster.pk}/health/").text


def test_prometheus_errors_never_show_credentials_from_the_url():
    from portal.cloud import PermanentCloudError, TransientCloudError
    from portal.cloud.prometheus import PrometheusEndpoint, query

    with pytest.raises((TransientCloudError, PermanentCloudError)) as error:
        query(PrometheusEndpoint("http://reader:s3cret@127.0.0.1:9"), "up", at=T0, timeout=1)
    assert "s3cret" not in error.value.message and "127.0.0.1:9" in error.value.message


# -- DCGM blanks and impossible values ------------------------------------------------

NOT_SUPPORTED = "9223372036854775794"  # DCGM_INT64_NOT_SUPPORTED, as older dcgm-exporters print it


def ecc_lines(values: dict[int, str]) -> str:
    lines = ["# TYPE DCGM_FI_DEV_ECC_DBE_VOL_TOTAL gauge"]
    lines += [f'DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{{gpu="{g}",Hostname="ip-10-1-0-1"}} {v}' for g, v in values.items()]
    return "\n".join(lines) + "\n"


def test_dcgm_blanks_open_nothing_refuse_nothing_and_the_board_says_not_supported(member_api, member, cluster):
    # The scrape: a vGPU without ECC fields and a blank Xid gauge.
    text = exporter_text({}).replace(
        'gpu="5",Hostname="ip-10-1-0-1"} 0', f'gpu="5",Hostname="ip-10-1-0-1"}} {NOT_SUPPORTED}'
    )
    text += ecc_lines({g: NOT_SUPPORTED for g in range(8)})
    response = post_metrics(member_api, cluster, text)
    assert response.status_code == 200, response.json()
    assert response.json()["opened"] == 0 and not HealthEvent.objects.exists() and not SupportCase.objects.exists()
    node = cluster.nodes.get(instance_id="i-0001")
    assert node.gpu_unsupported["5"] == ["ecc_dbe_volatile", "gpu_xid"]
    assert node.gpu_unsupported["0"] == ["ecc_dbe_volatile"]
    client = Client()
    client.force_login(member)
    page = client.get(f"/clusters/{cluster.pk}/health/")
    cells = {(row["node"].instance_id, c["gpu"]): c for row in page.context["board"]["rows"] for c in row["cells"] if c}
    assert cells[("i-0001", 5)]["unsupported"] == "Double-bit ECC errors, GPU XID error"
    assert cells[("i-0001", 5)]["state"] == "ok"
    assert cells[("i-0002", 5)]["unsupported"] == ""
    assert page.text.count('data-testid="unsupported"') == 8
    assert "Not supported by this GPU: Double-bit ECC errors, GPU XID error" in page.text


def test_a_blank_leaves_what_was_open_as_it_was_and_a_real_zero_resolves_it(member_api, cluster):
    assert post_metrics(member_api, cluster, exporter_text({}) + ecc_lines({2: "3"})).json()["opened"] == 1
    again = post_metrics(member_api, cluster, exporter_text({}) + ecc_lines({2: NOT_SUPPORTED}))
    assert again.json()["resolved"] == 0 and HealthEvent.objects.get().resolved_at is None  # no reading: unknown
    assert post_metrics(member_api, cluster, exporter_text({}) + ecc_lines({2: "0"})).json()["resolved"] == 1
    assert cluster.nodes.get(instance_id="i-0001").gpu_unsupported == {}


def test_a_blank_throttling_counter_is_not_kept_as_a_snapshot(member_api, cluster):
    text = exporter_text({}) + 'DCGM_FI_DEV_THERMAL_VIOLATION{gpu="0",Hostname="ip-10-1-0-1"} 9223372036854775792\n'
    assert post_metrics(member_api, cluster, text).status_code == 200
    assert cluster.nodes.get(instance_id="i-0001").gpu_counters == {}


@pytest.mark.parametrize(
    ("line_text", "says"),
    [
        ('DCGM_FI_DEV_GPU_TEMP{gpu="0",Hostname="ip-10-1-0-1"} 1e308\n', "line 10: DCGM_FI_DEV_GPU_TEMP on GPU 0"),
        ('DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{gpu="1",Hostname="ip-10-1-0-1"} -3\n', "is -3 errors: outside 0..1e+12"),
    ],
)
def test_impossible_values_are_a_400_naming_the_line_and_keep_nothing(member_api, cluster, line_text, says):
    response = post_metrics(member_api, cluster, exporter_text({0: 79}) + line_text)
    assert response.status_code == 400 and says in response.json()["metrics"][0]
    assert not HealthEvent.objects.exists() and not SupportCase.objects.exists()
    assert cluster.nodes.get(instance_id="i-0001").gpu_read_at is None


def test_an_impossible_value_from_prometheus_skips_that_node_and_says_why(prometheus, cluster):
    series = [*healthy("ip-10-1-0-1"), *healthy("ip-10-1-0-2")]
    series[3] = (XID_METRIC, {"Hostname": "ip-10-1-0-1", "gpu": "3"}, [(T0 + i * MINUTE, 79) for i in range(30)])
    series.append(("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", {"Hostname": "ip-10-1-0-1", "gpu": "0"}, [(T0, -3)]))
    amp = source(url=prometheus(series).url)
    polling.poll_source(amp, now=T0 + 2 * MINUTE)
    assert not HealthEvent.objects.filter(instance_id="i-0001").exists()  # nothing of that node's report kept
    amp.refresh_from_db()
    assert any("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL on GPU 0 is -3 errors" in host for host in amp.unmatched_hosts)
    assert HealthEvent.objects.filter(instance_id="i-0002").count() == 0  # the other node was read, and is fine
    assert cluster.nodes.get(instance_id="i-0002").gpu_read_at is not None
