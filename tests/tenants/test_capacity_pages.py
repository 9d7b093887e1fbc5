import re
from datetime import date, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from tenants.models import Allocation, CapacityRequest
from tests.charts import chart_payload, series
from tests.factories import (
    AllocationFactory,
    CapacityPoolFactory,
    CapacityRequestFactory,
    OrganizationFactory,
    ProgramFactory,
    instance_type,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("before_the_program")]


@pytest.fixture
def pool(db):
    return CapacityPoolFactory(program=ProgramFactory(), total_instances=127, spare_instances=2)


FORM = {
    "pool": "p5.48xlarge/us-east-1",
    "instance_count": "16",
    "starts_on": "2027-01-01",
    "ends_on": "2027-02-28",
    "justification": "Pre-training a 7B model.",
    "parameters_b": "7",
    "tokens_b": "",
    "framework": "megatron",
    "expected_mfu": "0.40",
}


def queries(client, url, **extra) -> tuple[int, object]:
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(url, **extra)
    assert response.status_code == 200
    return len(ctx.captured_queries), response


# --- Tenant pages ------------------------------------------------------------------------------


def test_capacity_page_empty_state(member_client, org, pool):
    response = member_client.get(reverse("capacity", args=[org.slug]))
    assert "No allocations yet." in response.text
    assert "No requests yet." in response.text
    assert "Request capacity" in response.text


def test_submitting_the_form_creates_a_submitted_request(member_client, org, pool):
    response = member_client.post(
        reverse("capacity-request-new", args=[org.slug]), {**FORM, "submit": "1"}, follow=True
    )
    request = CapacityRequest.objects.get()
    assert request.status == CapacityRequest.Status.SUBMITTED
    assert (request.parameter_count, request.training_tokens, request.framework) == (7 * 10**9, None, "megatron")
    assert f"Request R-{request.pk} submitted for review." in response.text
    assert "History" in response.text and "submitted it for review" in response.text


def test_saving_a_draft(member_client, org, pool):
    member_client.post(reverse("capacity-request-new", args=[org.slug]), {**FORM, "draft": "1"})
    assert CapacityRequest.objects.get().status == CapacityRequest.Status.DRAFT


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"instance_count": "0"}, "Ensure this value is greater than or equal to 1."),
        ({"ends_on": "2026-12-31"}, "The last day must not be before the first day."),
        (
            {"pool": "trn1.32xlarge/ap-northeast-1"},  # a crafted post: the form offers only the program's pools
            "The program has no pool of trn1.32xlarge/ap-northeast-1: choose one of its pools.",
        ),
        ({"instance_count": "126"}, "has 125 allocatable instances in all"),
        ({"starts_on": "2026-12-10"}, "choose dates inside that window"),
        ({"justification": ""}, "This field is required."),
    ],
)
def test_bad_form_input_is_shown_and_nothing_saved(member_client, org, pool, change, message):
    CapacityPoolFactory(program=pool.program, instance_type=instance_type("trn1.32xlarge"), total_instances=24)
    response = member_client.post(reverse("capacity-request-new", args=[org.slug]), {**FORM, **change, "submit": "1"})
    assert response.status_code == 400  # the form again, with its errors, as every form of the portal answers
    assert message in response.text
    assert 'name="parameters_b" value="7"' in response.text  # what the tenant typed is kept
    assert not CapacityRequest.objects.exists()


def test_live_estimate_partial(member_client, org, pool):
    response = member_client.post(
        reverse("capacity-estimate", args=[org.slug]), {**FORM, "justification": ""}, HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 200
    assert response.text.lstrip().startswith('<aside class="card estimate" id="estimate"')
    assert "<html" not in response.text
    assert "Fits: about" in response.text
    assert "<dd>140 billion" in response.text  # 20 tokens per parameter


def test_live_estimate_says_what_is_missing(member_client, org, pool):
    response = member_client.post(reverse("capacity-estimate", args=[org.slug]), {"pool": "p5.48xlarge/us-east-1"})
    assert "Enter the parameter count" in response.text


def test_live_estimate_flags_a_plan_that_does_not_fit(member_client, org, pool):
    response = member_client.post(
        reverse("capacity-estimate", args=[org.slug]),
        {**FORM, "parameters_b": "70", "tokens_b": "15000", "instance_count": "4"},
    )
    assert "Does not fit" in response.text
    assert re.search(r"<dd>\d,\d{3}\.\d / 59</dd>", response.text)  # thousands of days, grouped


def test_request_detail_submit_and_withdraw(member_client, org, pool):
    draft = CapacityRequestFactory(pool=pool, organization=org, status=CapacityRequest.Status.DRAFT)
    member_client.post(reverse("capacity-request-submit", args=[org.slug, draft.pk]))
    draft.refresh_from_db()
    assert draft.status == CapacityRequest.Status.SUBMITTED
    response = member_client.post(reverse("capacity-request-withdraw", args=[org.slug, draft.pk]), follow=True)
    draft.refresh_from_db()
    assert draft.status == CapacityRequest.Status.WITHDRAWN
    response = member_client.post(reverse("capacity-request-withdraw", args=[org.slug, draft.pk]), follow=True)
    assert "can be withdrawn; this one is withdrawn" in response.text


def test_extension_form_is_prefilled_from_the_allocation(member_client, org, pool):
    allocation = AllocationFactory(pool=pool, organization=org, starts_on=date(2027, 1, 1), ends_on=date(2027, 1, 31))
    response = member_client.get(reverse("capacity-request-new", args=[org.slug]) + f"?allocation={allocation.pk}")
    assert response.status_code == 200
    assert 'value="2027-02-01"' in response.text
    other = AllocationFactory(pool=pool, organization=OrganizationFactory())
    assert (
        member_client.get(reverse("capacity-request-new", args=[org.slug]) + f"?allocation={other.pk}").status_code
        == 404
    )


def test_an_active_allocation_offers_a_cluster_prefilled_from_it(member_client, org, pool):
    active = AllocationFactory(
        pool=pool, organization=org, starts_on=date(2026, 11, 1), ends_on=date(2026, 12, 31), status="active"
    )
    scheduled = AllocationFactory(pool=pool, organization=org, starts_on=date(2027, 1, 1), ends_on=date(2027, 1, 31))
    page = member_client.get(reverse("capacity", args=[org.slug])).text
    create = reverse("clusters:create", args=[org.slug])
    assert f"{create}?allocation={active.pk}" in page
    assert f"{create}?allocation={scheduled.pk}" not in page  # nothing to build on before its first day
    form = member_client.get(f"{create}?allocation={active.pk}")
    assert form.status_code == 200
    assert f'<option value="{active.pk}" selected>' in form.text


def test_org_home_shows_instance_hours_granted_ran_and_remaining(member_client, org, pool):
    """Granted is the whole allocation; ran and utilization come from usage accounting (what the org's nodes
    ran, not the calendar); remaining is what is left from now to the allocation's end."""
    from zoneinfo import ZoneInfo

    import time_machine

    from workloads.models import NodeInterval
    from workloads.usage import rollups

    tokyo = ZoneInfo("Asia/Tokyo")
    AllocationFactory(
        pool=pool,
        organization=org,
        instance_count=10,
        starts_on=date(2026, 11, 21),
        ends_on=date(2026, 12, 10),
        status=Allocation.Status.ACTIVE,
    )
    with time_machine.travel(datetime(2026, 12, 1, tzinfo=tokyo), tick=False):
        for number in range(2):  # two nodes ran the first five days: 240 of the 2,400 instance-hours so far
            NodeInterval.objects.create(
                organization=org, instance_id=f"i-{number}", instance_type="p5.48xlarge", region="us-east-1",
                started_at=datetime(2026, 11, 21, tzinfo=tokyo), ended_at=datetime(2026, 11, 26, tzinfo=tokyo),
                last_seen_at=datetime(2026, 11, 26, tzinfo=tokyo),
            )  # fmt: skip
        rollups.mark_everything()
        rollups.roll_up()
        response = member_client.get(reverse("org-home", args=[org.slug]))
    # 20 days × 10 × 24 = 4,800 granted (whole window); 240 ran to date: 10% of the 2,400 allocated so far
    # (utilization to date) and 5% of the grant; remaining is granted − ran = 4,560, not the calendar's 2,400.
    row = response.text[response.text.index('id="allocation-') :].split("</tr>")[0]
    assert "4,800" in row and "whole window" in response.text
    assert 'data-figure="ran">240<br><small>5% of granted' in row
    assert 'data-figure="utilization">10%' in row
    assert 'data-figure="remaining">4,560<' in row
    assert "2,400" not in row and "Elapsed" not in response.text
    # Burn-down at the last 7 days' rate: 48 instance-h ran from the 25th (6 days) → 8 a day; 10 days left → 80
    # more: 320 of 4,800 = 7% of the grant by its last day. The program's allocations page shows the same row.
    assert "→ 7%" in row and "7% of the grant used by its last day" in row
    from tenants.models import StaffRole
    from tests.factories import StaffRoleFactory

    member_client.force_login(StaffRoleFactory(role=StaffRole.Role.PROGRAM_MANAGER).user)
    with time_machine.travel(datetime(2026, 12, 1, tzinfo=tokyo), tick=False):
        program_page = member_client.get(reverse("allocations")).text
    program_row = program_page[program_page.index('id="allocation-') :].split("</tr>")[0]
    for figure in ('data-figure="remaining">4,560<', "→ 7%", "5% of granted", "whole window"):
        assert figure in program_row or figure in program_page, figure


def test_capacity_page_queries_do_not_grow(member_client, org, pool):
    url = reverse("capacity", args=[org.slug])
    for _ in range(2):
        CapacityRequestFactory(pool=pool, organization=org)
        AllocationFactory(pool=pool, organization=org)
    few, _ = queries(member_client, url)
    for _ in range(30):
        CapacityRequestFactory(pool=pool, organization=org)
        AllocationFactory(pool=pool, organization=org)
    assert queries(member_client, url)[0] == few


def test_the_orgs_allocations_come_a_page_at_a_time_newest_first(member_client, org, pool):
    from datetime import date, timedelta

    first = date(2026, 1, 1)
    for n in range(30):
        AllocationFactory(
            pool=pool, organization=org, starts_on=first + timedelta(days=n), ends_on=first + timedelta(days=n)
        )
    url = reverse("capacity", args=[org.slug])
    page1 = member_client.get(url).text
    assert "Page 1 of 2 (30 in all)" in page1
    assert "2026-01-30" in page1 and "2026-01-05" not in page1  # newest first: 30 Jan down to 6 Jan
    page2 = member_client.get(url, {"allocations_page": 2, "page": 1}).text
    assert "Page 2 of 2 (30 in all)" in page2
    assert "2026-01-05" in page2 and "2026-01-30" not in page2
    assert "page=1&amp;allocations_page=1" in page2  # the requests' page is kept when paging allocations


# --- Program staff -----------------------------------------------------------------------------


def test_review_queue_shows_free_capacity_and_bottleneck(manager_client, pool):
    AllocationFactory(pool=pool, instance_count=100, starts_on=date(2027, 1, 1), ends_on=date(2027, 3, 31))
    request = CapacityRequestFactory(
        pool=pool, instance_count=30, starts_on=date(2027, 3, 1), ends_on=date(2027, 4, 30), parameter_count=7 * 10**9
    )
    response = manager_client.get(reverse("review-queue"))
    assert f"R-{request.pk}" in response.text
    assert "25 of 125 free" in response.text
    assert "bottleneck 2027-03-01: 100 allocated" in response.text
    assert "Plan fits" in response.text


def test_a_review_card_lists_five_of_the_orgs_allocations_and_counts_the_rest(manager_client, pool, org):
    held = [
        AllocationFactory(pool=pool, organization=org, instance_count=1, starts_on=date(2027, 1, 1 + day),
                          ends_on=date(2027, 2, 1))
        for day in range(7)
    ]  # fmt: skip
    CapacityRequestFactory(pool=pool, organization=org)
    page = manager_client.get(reverse("review-queue")).text
    assert all(f"A-{a.pk} 1 ×" in page for a in held[:5])  # the first five by start day
    assert all(f"A-{a.pk} 1 ×" not in page for a in held[5:])
    assert "and 2 more" in page and f"?org={org.slug}" in page


def test_review_queue_empty_state(manager_client):
    assert "Nothing to review" in manager_client.get(reverse("review-queue")).text


def test_review_queue_queries_do_not_grow_with_requests(manager_client, pool):
    for _ in range(3):
        CapacityRequestFactory(pool=pool, parameter_count=10**9)
    few, _ = queries(manager_client, reverse("review-queue"))
    other_pool = CapacityPoolFactory(program=pool.program, region="ap-northeast-1")
    for i in range(40):
        CapacityRequestFactory(pool=pool if i % 2 else other_pool, parameter_count=10**9)
        AllocationFactory(pool=pool, instance_count=1)
    assert queries(manager_client, reverse("review-queue"))[0] == few


def test_htmx_partial_approval_swaps_the_row(manager_client, pool, org):
    request = CapacityRequestFactory(pool=pool, organization=org, instance_count=16)
    prefix = f"r{request.pk}"
    response = manager_client.post(
        reverse("capacity-decide", args=[request.pk]),
        {f"{prefix}-decision": "approve", f"{prefix}-instance_count": "8", f"{prefix}-comment": "Half for now."},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 200
    assert "Partially approved" in response.text and "allocated 8 instances" in response.text
    assert 'hx-swap-oob="afterbegin:#decision-log"' in response.text  # the outcome goes to the log
    assert response["HX-Trigger"] == "capacity-decided"  # and the queue reloads its free capacity
    assert "<html" not in response.text
    assert Allocation.objects.get().instance_count == 8


def test_htmx_overcommit_shows_the_error_in_the_row(manager_client, pool):
    AllocationFactory(pool=pool, instance_count=125, starts_on=date(2027, 1, 1), ends_on=date(2027, 1, 31))
    request = CapacityRequestFactory(
        pool=pool, instance_count=4, starts_on=date(2027, 1, 10), ends_on=date(2027, 1, 20)
    )
    response = manager_client.post(
        reverse("capacity-decide", args=[request.pk]), {f"r{request.pk}-decision": "approve"}, HTTP_HX_REQUEST="true"
    )
    assert "would overcommit" in response.text and "(free: 0, short by 4)" in response.text
    assert Allocation.objects.count() == 1


def test_reject_without_comment_is_refused(manager_client, pool):
    request = CapacityRequestFactory(pool=pool)
    response = manager_client.post(
        reverse("capacity-decide", args=[request.pk]), {f"r{request.pk}-decision": "reject"}, HTTP_HX_REQUEST="true"
    )
    assert "Tell the tenant why" in response.text
    request.refresh_from_db()
    assert request.status == CapacityRequest.Status.SUBMITTED


def test_support_engineer_sees_the_queue_but_cannot_decide(client, support, pool):
    client.force_login(support)
    request = CapacityRequestFactory(pool=pool)
    assert "Approve" not in client.get(reverse("review-queue")).text
    assert (
        client.post(reverse("capacity-decide", args=[request.pk]), {f"r{request.pk}-decision": "approve"}).status_code
        == 403
    )


@pytest.mark.parametrize("name", ["review-queue", "allocations", "audit-log"])
def test_staff_pages_are_403_for_tenants(member_client, name):
    assert member_client.get(reverse(name)).status_code == 403


def _timeline(client, pool) -> tuple[str, dict]:
    page = client.get(reverse("pool-timeline", args=[pool.pk])).text
    return page, chart_payload(page, "chart-pool-timeline")["option"]


def test_pool_timeline_is_staff_only_and_draws_the_stack(manager_client, member_client, pool):
    a = AllocationFactory(pool=pool, instance_count=100, starts_on=date(2027, 1, 1), ends_on=date(2027, 3, 31))
    AllocationFactory(pool=pool, instance_count=20, starts_on=date(2027, 2, 1), ends_on=date(2027, 4, 30))
    assert member_client.get(reverse("pool-timeline", args=[pool.pk])).status_code == 403
    response = manager_client.get(reverse("pool-timeline", args=[pool.pk]))
    assert response.status_code == 200
    assert 'data-chart="chart-pool-timeline"' in response.text and a.organization.name in response.text
    assert "Peak allocated: 120 instances; free at the peak: 5." in response.text
    b = Allocation.objects.exclude(pk=a.pk).get()
    # One stacked series per organization, a value per day of the pool's window, however many allocations.
    page, option = _timeline(manager_client, pool)
    days = option["xAxis"]["data"]
    assert days[0] == pool.starts_on.isoformat() and days[-1] == pool.ends_on.isoformat()
    held_a, held_b = series(option, a.organization.name), series(option, b.organization.name)
    assert held_a["stack"] == held_b["stack"] == "allocated"
    assert held_a["data"][days.index("2027-01-01")] == 100 and held_a["data"][days.index("2027-04-01")] == 0
    assert held_b["data"][days.index("2027-01-31")] == 0 and held_b["data"][days.index("2027-04-30")] == 20
    # The allocatable and total lines, labelled with their values; the axis is ECharts' (round ticks).
    allocatable = series(option, f"allocatable: {pool.allocatable_instances}")
    assert set(allocatable["data"]) == {pool.allocatable_instances}
    assert allocatable["markLine"]["label"]["formatter"] == f"allocatable: {pool.allocatable_instances}"
    assert series(option, f"total: {pool.total_instances} (spare above allocatable)")["data"][0] == pool.total_instances
    # The table beside the chart: a row per run of days where nothing changes, saying who holds what.
    row = '<th scope="row">{}</th><td class="num">{}</td><td class="num">{}</td>'
    assert row.format("2027-01-01 – 2027-01-31", 100, f"{a.organization.name} 100") in page
    assert row.format("2027-02-01 – 2027-03-31", 120, f"{a.organization.name} 100, {b.organization.name} 20") in page
    assert f"{b.organization.name} 20</td>" in page.split("2027-04-01 – 2027-04-30")[1]


def test_the_pool_timeline_draws_as_many_series_for_many_allocations_as_for_few(manager_client, pool, org):
    AllocationFactory(
        pool=pool, organization=org, instance_count=1, starts_on=date(2027, 1, 1), ends_on=date(2027, 1, 9)
    )
    _page, few = _timeline(manager_client, pool)
    for n in range(40):  # the same org, forty more allocations on other days
        day = date(2027, 2, 1) + timedelta(days=2 * n)
        AllocationFactory(pool=pool, organization=org, instance_count=1 + n % 3, starts_on=day, ends_on=day)
    page, many = _timeline(manager_client, pool)
    assert many["series"] and [s["name"] for s in many["series"]] == [s["name"] for s in few["series"]]
    window = (pool.ends_on - pool.starts_on).days + 1
    assert all(len(s["data"]) == window for s in many["series"])  # a value a day, whatever the allocations
    assert page.count("<tr>") <= window + 1  # the table: at most a row a day


def test_pool_timeline_stacks_the_largest_orgs_and_the_rest_from_the_ledger(manager_client, pool):
    from tenants.capacity.charts import MAX_SERIES

    big = [
        AllocationFactory(pool=pool, instance_count=10 + n, starts_on=date(2027, 1, 1), ends_on=date(2027, 1, 31))
        for n in range(MAX_SERIES)
    ]
    small = [
        AllocationFactory(pool=pool, instance_count=1, starts_on=date(2027, 1, 1 + n), ends_on=date(2027, 1, 10))
        for n in range(3)
    ]
    page, option = _timeline(manager_client, pool)
    assert all(a.organization.name in page for a in big)
    assert all(a.organization.name not in page for a in small) and "3 other organizations" in page
    # The others' stack from the ledger: 1 on Jan 1, 2 on Jan 2, then 3 to the 10th, nothing after.
    days, others = option["xAxis"]["data"], series(option, "3 other organizations")["data"]
    assert [others[days.index(f"2027-01-{d:02d}")] for d in (1, 2, 3, 10, 11)] == [1, 2, 3, 3, 0]
    total = sum(a.instance_count for a in big)
    for span, rest in (("2027-01-01", 1), ("2027-01-02", 2), ("2027-01-03 – 2027-01-10", 3)):
        cells = rf'{span}</th><td class="num">{total + rest}</td><td[^>]*>[^<]*, 3 other organizations {rest}<'
        assert re.search(cells, page), span


def test_allocations_page_filters_and_revokes(manager_client, pool, org):
    allocation = AllocationFactory(pool=pool, organization=org)
    AllocationFactory(pool=pool)
    response = manager_client.get(reverse("allocations") + f"?org={org.slug}", HTTP_HX_REQUEST="true")
    assert response.text.count("<tr") == 2  # header + one row
    manager_client.post(reverse("allocation-revoke-page", args=[allocation.pk]), {"reason": "Left the program."})
    allocation.refresh_from_db()
    assert allocation.status == Allocation.Status.REVOKED
    audit = manager_client.get(reverse("audit-log"))
    assert "allocation.revoked" in audit.text and "Left the program." in audit.text
    assert "Status: Scheduled → Revoked" in audit.text  # field and values in words, not stored names
    link = f'<a href="/orgs/{org.slug}/capacity/#allocation-{allocation.pk}">Allocation A-{allocation.pk}</a>'
    assert link in audit.text
    assert f'id="allocation-{allocation.pk}"' in manager_client.get(reverse("capacity", args=[org.slug])).text


def test_revoke_without_reason_changes_nothing(manager_client, pool):
    allocation = AllocationFactory(pool=pool)
    response = manager_client.post(reverse("allocation-revoke-page", args=[allocation.pk]), {"reason": ""}, follow=True)
    assert "Give the reason" in response.text
    allocation.refresh_from_db()
    assert allocation.status == Allocation.Status.SCHEDULED


@pytest.mark.parametrize("value", ["abc", "1.5", "-1"])
def test_malformed_allocation_parameter_is_404(member_client, org, pool, value):
    response = member_client.get(reverse("capacity-request-new", args=[org.slug]) + f"?allocation={value}")
    assert response.status_code == 404


def test_staff_see_no_request_buttons_on_tenant_pages(manager_client, org, pool):
    AllocationFactory(pool=pool, organization=org, status=Allocation.Status.ACTIVE)
    response = manager_client.get(reverse("capacity", args=[org.slug]))
    assert ">Request capacity</a>" not in response.text and "kind=enlargement" not in response.text


def test_deciding_an_already_decided_request_shows_the_outcome(manager_client, pool):
    request = CapacityRequestFactory(pool=pool, status=CapacityRequest.Status.APPROVED)
    response = manager_client.post(
        reverse("capacity-decide", args=[request.pk]), {f"r{request.pk}-decision": "approve"}, HTTP_HX_REQUEST="true"
    )
    assert "Approved" in response.text and "<form" not in response.text


def test_extend_is_offered_only_while_the_pool_has_days_after_the_allocation(member_client, org, pool):
    to_the_end = AllocationFactory(organization=org, pool=pool, starts_on=pool.starts_on, ends_on=pool.ends_on)
    shorter = AllocationFactory(organization=org, pool=pool, starts_on=pool.starts_on, ends_on=date(2027, 1, 31))
    page = member_client.get(reverse("capacity", args=[org.slug])).text
    assert f"allocation={shorter.pk}&amp;kind=extension" in page
    assert f"allocation={to_the_end.pk}&amp;kind=extension" not in page
    assert f"allocation={to_the_end.pk}&amp;kind=enlargement" in page


@pytest.mark.parametrize("role", ["manager_client", "support_client"])
def test_staff_are_not_offered_a_request_form_they_cannot_submit(request, role, org, pool):
    client = request.getfixturevalue(role)
    assert "Request capacity</a>" not in client.get(reverse("capacity", args=[org.slug])).text
    assert client.get(reverse("capacity-request-new", args=[org.slug])).status_code == 403
    assert client.post(reverse("capacity-request-new", args=[org.slug]), {**FORM, "submit": "1"}).status_code == 403
    assert not CapacityRequest.objects.exists()


def test_live_estimate_says_why_it_cannot_estimate(member_client, org, pool):
    response = member_client.post(
        reverse("capacity-estimate", args=[org.slug]), {**FORM, "ends_on": "2026-12-01"}, HTTP_HX_REQUEST="true"
    )
    assert "Last day: The last day must not be before the first day." in response.text


def test_the_form_offers_only_the_pools_the_program_has(member_client, org, pool):
    """a type and region without a pool (Trn1 in Tokyo) cannot be chosen at all."""
    CapacityPoolFactory(program=pool.program, instance_type=instance_type("trn1.32xlarge"), total_instances=24)
    page = member_client.get(reverse("capacity-request-new", args=[org.slug])).text

    offered = re.findall(r'<option value="([^"]+/[^"]+)"', page)
    assert offered == ["p5.48xlarge/us-east-1", "trn1.32xlarge/us-east-1"]
    assert "p5.48xlarge · us-east-1 · 8 × NVIDIA H100 80 GB" in page


def test_a_finished_pool_is_not_offered(member_client, org, pool):
    CapacityPoolFactory(
        program=pool.program, region="ap-northeast-1", starts_on=date(2025, 1, 1), ends_on=date(2025, 6, 30)
    )
    page = member_client.get(reverse("capacity-request-new", args=[org.slug])).text
    assert "p5.48xlarge/ap-northeast-1" not in page


def test_the_estimate_says_how_many_instances_would_finish_in_time(member_client, org, pool):
    response = member_client.post(
        reverse("capacity-estimate", args=[org.slug]),
        {**FORM, "parameters_b": "70", "tokens_b": "15000", "instance_count": "4"},
    )
    # 6 × 70e9 × 15e12 FLOPs at 40 % of 989 TFLOPS: 4,423,200 instance-hours... over 59 days (1,416 h).
    needed = re.search(r"(\S+) instances would finish in time", response.text).group(1)
    assert int(needed.replace(",", "")) > 4


def test_the_estimate_shows_the_pools_free_capacity_over_the_window(member_client, org, pool):
    AllocationFactory(pool=pool, instance_count=120, starts_on=date(2027, 2, 1), ends_on=date(2027, 2, 10))
    response = member_client.post(reverse("capacity-estimate", args=[org.slug]), FORM, HTTP_HX_REQUEST="true")
    assert "Only 5 instances are free in this pool on 2027-02-01, its busiest day in your window." in response.text
    # The run fits the window on what was asked, but the pool cannot grant it: not a green "Fits".
    assert 'class="verdict warn"' in response.text and "but the pool cannot grant them all" in response.text

    calm = member_client.post(
        reverse("capacity-estimate", args=[org.slug]), {**FORM, "instance_count": "4"}, HTTP_HX_REQUEST="true"
    )
    assert "5 instances are free in this pool over your whole window." in calm.text
    assert 'class="verdict ok"' in calm.text and "Fits: about" in calm.text


def test_the_estimate_names_no_error_for_a_field_not_filled_in_yet(member_client, org, pool):
    response = member_client.post(
        reverse("capacity-estimate", args=[org.slug]),
        {**FORM, "starts_on": "", "ends_on": ""},
        HTTP_HX_REQUEST="true",
    )
    assert "This field is required" not in response.text and "First day" not in response.text
    assert "Enter the parameter count" in response.text
    typo = member_client.post(
        reverse("capacity-estimate", args=[org.slug]), {**FORM, "starts_on": "2027-13-01"}, HTTP_HX_REQUEST="true"
    )
    assert "First day: Enter a valid date." in typo.text  # what the person typed wrong is said at once


def test_a_manager_can_open_the_cluster_form_from_an_active_allocation(manager_client, support_client, pool, org):
    active = AllocationFactory(pool=pool, organization=org, status=Allocation.Status.ACTIVE)
    AllocationFactory(pool=pool, organization=org)  # scheduled: no cluster yet
    link = f"/orgs/{org.slug}/clusters/new/?allocation={active.pk}"
    page = manager_client.get(reverse("allocations")).text
    assert page.count("/clusters/new/") == 1 and link in page
    assert "/clusters/new/" not in support_client.get(reverse("allocations")).text  # support engineers watch
    assert manager_client.get(link).status_code == 200


@pytest.mark.parametrize("mfu", ["0", "1.5", "-0.2"])
def test_live_estimate_refuses_an_impossible_utilization(member_client, org, pool, mfu):
    response = member_client.post(
        reverse("capacity-estimate", args=[org.slug]), {**FORM, "expected_mfu": mfu}, HTTP_HX_REQUEST="true"
    )
    assert "Expected model FLOPs utilization:" in response.text and "Accelerator-hours" not in response.text


@pytest.mark.parametrize("query", ["org=%00", "org=no-such-org", "status=%00", "status=nope"])
@pytest.mark.parametrize("page", ["allocations", "audit-log"])
def test_a_filter_value_that_is_not_a_choice_is_a_400_never_a_database_error(manager_client, org, pool, page, query):
    """A NUL reached PostgreSQL from ?org= and answered 500 there (SQLite let it through): a filter takes only its
    choices."""
    AllocationFactory(pool=pool, organization=org)
    response = manager_client.get(f"{reverse(page)}?{query}")
    if page == "audit-log" and query.startswith("status"):
        assert response.status_code == 200  # the audit trail has no status filter: the parameter is not read
        return
    assert response.status_code == 400
    assert not re.search(r'id="allocation-\d+"', response.text)


@pytest.mark.parametrize("value", ["%00", "nope"])
def test_a_tenants_request_status_filter_takes_only_statuses(member_client, org, pool, value):
    CapacityRequestFactory(pool=pool, organization=org)
    assert member_client.get(f"{reverse('capacity', args=[org.slug])}?status={value}").status_code == 400
    assert member_client.get(f"{reverse('capacity', args=[org.slug])}?status=submitted").status_code == 200


def test_a_plan_no_grantable_count_finishes_says_to_ask_for_a_longer_window(member_client, org, pool):
    response = member_client.post(
        reverse("capacity-estimate", args=[org.slug]),
        {
            **FORM,
            "parameters_b": "1000",
            "tokens_b": "9000000",
            "expected_mfu": "0.01",
            "instance_count": "100",
            "ends_on": "2027-01-02",
        },
        HTTP_HX_REQUEST="true",
    )
    assert "no number of instances the program grants finishes it in time" in response.text
    assert "instances would finish in time" not in response.text


def test_requests_and_allocations_are_numbered_apart(member_client, org, pool):
    """request 13 and allocation 13 both read "#13"; now R-13 and A-13 wherever they appear."""
    request = CapacityRequestFactory(organization=org, pool=pool, status=CapacityRequest.Status.APPROVED)
    allocation = AllocationFactory(organization=org, pool=pool, request=request)
    detail = member_client.get(reverse("capacity-request", args=[org.slug, request.pk])).text
    assert f"Request R-{request.pk}" in detail and f"A-{allocation.pk}:" in detail
    listing = member_client.get(reverse("capacity", args=[org.slug])).text
    assert f">R-{request.pk}</a>" in listing and f">A-{allocation.pk}</td>" in listing
    assert f"#{request.pk}<" not in listing and f"#{allocation.pk}<" not in listing
    assert str(request).startswith(f"R-{request.pk} ") and str(allocation).startswith(f"A-{allocation.pk} ")


def test_the_allocation_lists_sort_by_their_columns_in_place(manager_client, member_client, org, pool):
    """?sort=instances / -instances orders the staff page and an organization's capacity page,
    through htmx (the table's own part swapped), keeping the filters; an unknown key is ignored."""
    small = AllocationFactory(
        organization=org, pool=pool, instance_count=2, starts_on=date(2027, 1, 1), ends_on=date(2027, 1, 31)
    )
    large = AllocationFactory(
        organization=org, pool=pool, instance_count=9, starts_on=date(2027, 2, 1), ends_on=date(2027, 2, 28)
    )
    for sort, expected in (("instances", [small, large]), ("-instances", [large, small]), ("bogus", [large, small])):
        page = manager_client.get(
            reverse("allocations"), {"sort": sort, "org": org.slug}, headers={"HX-Request": "true"}
        )
        assert page.status_code == 200 and "<html" not in page.text
        assert page.context["table"].page.object_list == expected, sort
    assert (
        f"?org={org.slug}&amp;sort=-instances"
        in manager_client.get(reverse("allocations"), {"org": org.slug, "sort": "instances"}).text
    )  # the header sorts the other way next, the filter kept
    url = reverse("capacity", args=[org.slug])
    fragment = member_client.get(
        url, {"allocations_sort": "instances"}, headers={"HX-Request": "true", "HX-Target": "allocation-rows"}
    )
    assert 'id="allocation-rows"' in fragment.text and 'id="request-rows"' not in fragment.text
    assert fragment.context["allocation_table"].page.object_list == [small, large]
