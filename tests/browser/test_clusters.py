"""A tenant creates a HyperPod cluster in the browser and watches it reach in service without reloading:
a real Celery worker provisions it in moto's threaded emulator; the test plays the cloud's slowness."""

import pytest
from django.core.management import call_command
from moto.sagemaker import models as sagemaker_models

from tenants.models import Organization
from tests.clusters.conftest import (
    Emulator,
    emulator_server,  # noqa: F401  (fixture)
    seed_scripts,
)
from tests.clusters.test_worker_integration import wait_for, worker  # noqa: F401  (fixture)
from workloads.clusters import tasks as cluster_tasks
from workloads.models import Cluster

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("catalog", "worker"),
]


def log_in(page, live_server, username: str) -> None:
    page.goto(f"{live_server.url}/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill("demo")
    page.get_by_role("button", name="Log in").click()


def test_tenant_creates_a_cluster_and_watches_it_come_into_service(page, live_server, screenshot, monkeypatch):
    call_command("load_demo", "--start", "2026-10-01")
    call_command("load_cluster_demo")
    org = Organization.objects.get(slug="sakura-lab")
    seed_scripts(org)
    emulator = Emulator(org.aws_account_id)
    real_init = sagemaker_models.Cluster.__init__

    def creating(self, *args, **kwargs):  # the real service spends minutes in Creating
        real_init(self, *args, **kwargs)
        self.status = "Creating"

    monkeypatch.setattr(sagemaker_models.Cluster, "__init__", creating)

    log_in(page, live_server, "tenant1")
    page.wait_for_url(f"{live_server.url}/orgs/sakura-lab/")
    page.goto(f"{live_server.url}/clusters/")
    assert page.get_by_text("No clusters yet").is_visible()
    page.get_by_role("link", name="New cluster").click()
    assert page.get_by_label("Worker instances").input_value() == "12"  # pre-filled from the allocation
    page.get_by_label("Cluster name").fill("sakura-70b")
    page.get_by_label("Worker instances").fill("4")
    screenshot("cluster-create-form")
    page.get_by_role("button", name="Create cluster").click()

    status = page.get_by_test_id("cluster-status")
    assert status.inner_text() in ("Requested", "Provisioning")
    flash = page.get_by_text("Cluster sakura-70b requested: it is being provisioned.")
    assert flash.is_visible()
    page.evaluate("window.__notReloaded = true")
    page.wait_for_function("() => document.querySelector('[data-testid=cluster-status]').innerText === 'Provisioning'")
    assert page.locator("progress").is_visible()
    screenshot("cluster-provisioning")

    cluster = Cluster.objects.get(name="sakura-70b")
    wait_for(lambda: emulator.clusters() == [cluster.cloud_name], "the create call")
    emulator.set_cluster_status(cluster.cloud_name, "InService")
    Cluster.objects.filter(pk=cluster.pk).update(last_polled_at=None)
    cluster_tasks.poll_clusters.delay()  # what beat does every minute

    page.wait_for_function(
        "() => document.querySelector('[data-testid=cluster-status]').innerText === 'In service'", timeout=30_000
    )
    assert page.evaluate("window.__notReloaded") is True  # htmx swapped the status in; no reload
    assert page.locator("progress").count() == 0  # polling and the progress bar stop once in service
    assert flash.count() == 1 and not flash.is_visible()  # "being provisioned" is no longer true
    assert page.get_by_role("cell", name="workers-p5-48xlarge-3").is_visible()
    assert page.get_by_test_id("timeline").get_by_text("Provisioning").first.is_visible()
    screenshot("cluster-in-service")

    page.goto(f"{live_server.url}/clusters/")
    assert page.get_by_role("link", name="sakura-70b").is_visible()
    screenshot("cluster-list")
