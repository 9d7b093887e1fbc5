"""What clusters report, in Chromium at 1280 px in English and Japanese: a 32-node cluster's GPU board (every cell
legible, nothing overflowing), its jobs, its interconnect chart, its Reporter page (a token issued and shown once),
and the staff's incidents. Screenshots in test-artifacts/."""

from datetime import date, timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from tests.browser.test_usage import OVERFLOWING, log_in
from tests.factories import ClusterFactory, ClusterNodeFactory
from tests.jobs.sacct_rows import HEADER, line
from tests.validation.test_nccl import SRUN_LOG
from workloads.health.telemetry import ingest_exporter_text
from workloads.jobs.services import ingest_sacct
from workloads.validation.services import record_validation

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("catalog")]
NODES = 32


@pytest.fixture
def reported(db):
    """tenant1's organization with a 32-node P5 cluster that reported jobs, GPU readings (an Xid 79) and a run."""
    call_command("load_demo", "--start", (date.today() - timedelta(days=45)).isoformat())
    from tenants.models import Organization

    org = Organization.objects.get(slug="sakura-lab")
    cluster = ClusterFactory(organization=org, name="p5-pretrain-32", workers=NODES)
    now = timezone.now()
    hosts = [f"ip-10-1-{n // 250}-{n % 250 + 1}" for n in range(NODES)]
    for number, host in enumerate(hosts):
        ClusterNodeFactory(cluster=cluster, instance_id=f"i-0{number:016x}", hostname=host, gpu_read_at=now)
    start = (now - timedelta(hours=3)).strftime("%Y-%m-%dT%H:%M:%S")
    rows = [line("9001", name="pretrain-70b", state="RUNNING", start=start, submit=start, end="Unknown", nnodes="32",
                 nodelist="ip-10-1-0-[1-32]", tres="gres/gpu:h100=256,gres/gpu=256")]  # fmt: skip
    rows += [line(str(8000 + n), user=f"user{n % 3}", partition=("eval" if n % 4 else "train")) for n in range(12)]
    ingest_sacct(cluster=cluster, text="\n".join([HEADER, *rows]) + "\n", timezone_name="UTC")
    for number, host in enumerate(hosts):
        values = {3: 79} if number == 5 else {}
        text = "# TYPE DCGM_FI_DEV_XID_ERRORS gauge\n" + "".join(
            f'DCGM_FI_DEV_XID_ERRORS{{gpu="{gpu}",Hostname="{host}"}} {values.get(gpu, 0)}\n' for gpu in range(8)
        )
        ingest_exporter_text(cluster=cluster, text=text, host=host)
    record_validation(cluster=cluster, log=SRUN_LOG, nodes=2)
    return cluster


@pytest.mark.parametrize("language", ["en", "ja"])
def test_a_tenant_reads_its_clusters_reports_at_1280(page, live_server, screenshot, reported, language):
    log_in(page, live_server, "tenant1", language)
    base = f"{live_server.url}/clusters/{reported.pk}"

    page.goto(f"{base}/health/")
    assert page.locator("table.gpu-board tbody tr").count() == NODES
    assert page.locator("table.gpu-board td.cell").count() == NODES * 8
    critical = page.locator("table.gpu-board td.cell.state-critical")
    assert critical.count() == 1 and critical.inner_text() == "79"
    box = page.locator("table.gpu-board").bounding_box()
    assert box["x"] + box["width"] <= 1280  # 8 GPU columns and the node names fit the page
    assert page.locator("#health-board").get_attribute("hx-trigger") == "every 30s"
    assert page.evaluate(OVERFLOWING) == []
    assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0
    screenshot(f"cluster-health-board-{language}")

    page.goto(f"{live_server.url}/jobs/?cluster={reported.pk}")
    assert page.locator("table.jobs tbody tr").count() == 13
    assert "256" in page.get_by_test_id("running-now").inner_text()  # the one running job's accelerators
    assert page.evaluate(OVERFLOWING) == []
    screenshot(f"cluster-jobs-{language}")

    page.goto(f"{base}/interconnect/")
    assert page.get_by_test_id("nccl-chart").locator("svg").count() == 1  # drawn by ECharts (tests/browser/test_charts)
    assert page.evaluate(OVERFLOWING) == []
    screenshot(f"cluster-interconnect-{language}")

    page.goto(f"{base}/")
    for card in ("cluster-jobs", "cluster-interconnect", "cluster-reporter", "cluster-cases"):
        assert page.get_by_test_id(card).is_visible()
    assert page.evaluate(OVERFLOWING) == []
    screenshot(f"cluster-detail-reports-{language}")

    page.goto(f"{base}/reporter/")
    page.locator("input[name=name]").fill("head node")
    page.locator("form.inline button[type=submit]").click()
    page.wait_for_load_state()
    key = page.get_by_test_id("new-token").input_value()
    assert key.startswith("fmc_")
    assert f"FMP_CLUSTER_ID={reported.pk}" in page.get_by_test_id("install").inner_text()
    assert page.evaluate(OVERFLOWING) == []
    screenshot(f"cluster-reporter-{language}")
    page.goto(f"{base}/reporter/")
    assert page.get_by_test_id("new-token").count() == 0  # shown once


@pytest.mark.parametrize("language", ["en", "ja"])
def test_staff_read_incidents_and_rules_at_1280(page, live_server, screenshot, reported, language):
    log_in(page, live_server, "support", language)
    page.goto(f"{live_server.url}/program/incidents/")
    assert page.locator("#incident-table tbody tr").count() == 1
    assert page.evaluate(OVERFLOWING) == []
    assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0
    screenshot(f"incidents-{language}")
    page.goto(f"{live_server.url}/program/health-rules/")
    assert page.evaluate(OVERFLOWING) == []
    screenshot(f"health-rules-{language}")
