"""A tenant opens a case, support replies (and leaves an internal note), the tenant sees the reply only."""

import pytest
from django.core import mail
from django.core.management import call_command

from portal.celery import app as celery_app
from tests.workloads.conftest import forget_producer_pool
from workloads.models import SupportCase

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("catalog")]
REPLY = "Two nodes had a failing EFA device; we replaced them. Please resubmit the job."
NOTE = "Internal only: this tenant has hit EFA faults three times this month"


@pytest.fixture(autouse=True)
def eager_notifications():
    # The live server sends case emails through Celery: run them in-process (no broker in this test).
    celery_app.set_current()
    before = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True
    yield
    celery_app.conf.task_always_eager = before
    forget_producer_pool()


def log_in(page, live_server, username: str) -> None:
    page.goto(f"{live_server.url}/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill("demo")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_load_state()


def test_tenant_opens_a_case_support_replies_and_the_internal_note_stays_internal(
    browser, page, live_server, screenshot
):
    call_command("load_demo", "--start", "2026-10-01")

    # The tenant opens a case from the Support page.
    log_in(page, live_server, "tenant1")
    page.get_by_role("navigation").get_by_role("link", name="Support").click()
    page.get_by_role("link", name="Open a case").click()
    page.get_by_label("Title").fill("NCCL all_reduce hangs on 16 nodes")
    page.get_by_label("Category").select_option("networking")
    page.get_by_label("Severity").select_option("s2")
    page.get_by_label("Description").fill("Job 4121 stalls after 20 minutes; NCCL_DEBUG shows EFA timeouts.")
    page.get_by_role("button", name="Open case").click()
    page.wait_for_url(f"{live_server.url}/support/*/")
    assert page.get_by_role("heading", level=1).inner_text().endswith("NCCL all_reduce hangs on 16 nodes")
    assert "waiting for the first reply" in page.content()
    screenshot("support-case-tenant-opened")
    case_url = page.url

    # Support replies and adds an internal note, both through htmx (no page reload).
    support = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US").new_page()
    log_in(support, live_server, "support")
    support.goto(case_url)
    support.get_by_label("Comment", exact=True).fill(REPLY)
    support.get_by_role("button", name="Add comment").click()
    support.locator(".case-timeline").get_by_text(REPLY).wait_for()
    support.get_by_label("Comment", exact=True).fill(NOTE)
    support.get_by_label("Internal note").check()
    support.get_by_role("button", name="Add comment").click()
    support.locator(".case-timeline li.internal").get_by_text(NOTE).wait_for()
    assert support.get_by_text("Internal note · staff only").is_visible()
    support.screenshot(path=str(_artifact("support-case-staff-view")), full_page=True)
    support.context.close()

    # The tenant sees the reply, never the note; first response time is now shown.
    page.goto(case_url)
    timeline = page.locator(".case-timeline")
    assert timeline.get_by_text(REPLY).is_visible()
    assert NOTE not in page.content()
    assert "Internal note" not in page.content()
    assert "after " in page.locator("dd").filter(has_text="after").first.inner_text()
    screenshot("support-case-tenant-sees-reply")

    # Email: the tenant got the reply, and the note went to nobody outside the program team.
    case = SupportCase.objects.get()
    tenant_mail = [m for m in mail.outbox if m.to == ["tenant1@demo.example"]]
    assert any(REPLY in m.body for m in tenant_mail)
    assert not any(NOTE in m.body for m in tenant_mail)
    assert case.first_response_at is not None


def _artifact(name: str):
    from tests.browser.conftest import ARTIFACTS

    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS / f"{name}.png"


def test_staff_filter_the_tracking_view_in_place_and_review_the_week(page, live_server, screenshot):
    from tenants.models import Organization
    from workloads.records.services import create_workload

    call_command("load_demo", "--start", "2026-10-01")
    orgs = {o.slug: o for o in Organization.objects.all()}
    plans = [
        ("sakura-lab", "tenant1", "sakura-70b", "megatron", "hyperpod_slurm", 70, "running"),
        ("sakura-lab", "tenant1", "sakura-8b-sft", "hf_trainer", "eks", 8, "planned"),
        ("kitsune-ai", "tenant2", "kitsune-moe-235b", "megatron", "parallelcluster_slurm", 235, "running"),
        ("kitsune-ai", "tenant2", "kitsune-trn-13b", "neuronx", "hyperpod_eks", 13, "paused"),
    ]
    from django.contrib.auth import get_user_model

    users = {u.username: u for u in get_user_model().objects.filter(username__in=["tenant1", "tenant2"])}
    for slug, username, name, framework, cluster, size, status in plans:
        moe = "moe" in name
        create_workload(
            user=users[username],
            organization=orgs[slug],
            data={
                "name": name,
                "phase": "pretraining",
                "status": status,
                "model_name": name.title(),
                "architecture": "moe" if moe else "dense",
                "parameter_count": size * 10**9,
                "active_parameter_count": 22 * 10**9 if moe else None,
                "target_tokens": 10**12 * 4,
                "framework": framework,
                "tensor_parallel": 8,
                "pipeline_parallel": 4,
                "data_parallel": 8,
                "expert_parallel": 8 if moe else 1,
                "cluster_type": cluster,
                "storage": "fsx_lustre_s3",
                "notes": "",
            },
        )

    log_in(page, live_server, "manager")
    page.get_by_role("navigation").get_by_role("link", name="Workloads").click()
    rows = page.locator("#workload-table tbody tr")
    assert rows.count() == 4
    page.evaluate("window.__not_reloaded = true")
    page.get_by_label("Framework").select_option("megatron")
    page.wait_for_url("**framework=megatron**")
    rows.first.wait_for()
    assert page.locator("#workload-table tbody tr").count() == 2
    assert page.evaluate("window.__not_reloaded") is True  # htmx swapped the table, no page load
    screenshot("workload-tracking-filtered")

    page.goto(f"{live_server.url}/workloads/print/")
    assert page.locator(".print-page").count() == 12  # one page per org, quiet ones included
    screenshot("workload-tracking-document")
    page.emulate_media(media="print")
    assert page.locator(".topbar").is_hidden()
    page.emulate_media(media="screen")

    page.get_by_role("navigation").get_by_role("link", name="Weekly review").click()
    assert page.get_by_role("heading", level=1).inner_text().startswith("Weekly review 20")
    screenshot("weekly-review")
