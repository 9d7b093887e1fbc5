"""The program's landing page (/program/): the week at a glance for program staff."""

from datetime import date, timedelta
from decimal import Decimal

import pytest
import time_machine
from django.urls import reverse

from tenants.models import Allocation, CapacityRequest
from tests.factories import (
    CapacityRequestFactory,
    ClusterFactory,
    HealthEventFactory,
    OrganizationFactory,
    SupportCaseFactory,
)
from tests.usage.conftest import allocate, jst, run
from workloads.clusters.models import Cluster
from workloads.usage import rollups
from workloads.usage.definitions import cost_micro_usd
from workloads.usage.models import BilledCost

NOW = jst(2027, 3, 17, 9)  # a Wednesday: last closed week is 2027-W10 (Mar 8–14), this week W11


@pytest.fixture(autouse=True)
def on_wednesday():
    with time_machine.travel(NOW, tick=False):
        yield


def roll_up():
    rollups.mark_everything()
    rollups.roll_up()


@pytest.fixture
def story(program, p5, trn1, org_a, org_b):
    """Alpha runs its 2 P5 all week; Beta holds 2 Trn1 and runs nothing (idle); Gamma's P5 allocation ended on the
    9th and its node kept running to the 15th (over-allocation). AWS billed Alpha 20% more than computed for the
    8th–12th (settled through the 12th)."""
    gamma = OrganizationFactory(name="Gamma Lab", slug="gamma")
    allocate(org_a, p5, 2, date(2027, 1, 1), date(2027, 6, 30), status=Allocation.Status.ACTIVE)
    allocate(org_b, trn1, 2, date(2027, 3, 1), date(2027, 3, 25), status=Allocation.Status.ACTIVE)
    allocate(gamma, p5, 1, date(2027, 2, 1), date(2027, 3, 9), status=Allocation.Status.EXPIRED)
    for slot in range(2):
        run(org_a, "p5.48xlarge", jst(2027, 3, 1), last_seen=NOW, instance=f"a{slot}")
    run(gamma, "p5.48xlarge", jst(2027, 2, 1), jst(2027, 3, 15), instance="g1")
    roll_up()
    for day in range(8, 13):
        BilledCost.objects.create(
            organization=org_a,
            day=date(2027, 3, day),
            instance_type="p5.48xlarge",
            cost_micro_usd=ALPHA_DAY * 6 // 5,  # 2,641.92 × 1.2 = 3,170.304 USD
            fetched_at=NOW,
        )
    return {"alpha": org_a, "beta": org_b, "gamma": gamma}


# By hand, at the catalog's P5 rate in us-east-1 (55.04 USD/h; no negotiated rate in this story):
# Alpha runs 2 P5 all day: 2 × 24 h × 55.04 = 2,641.92 USD a day.
ALPHA_DAY = 2_641_920_000  # micro-USD
# Gamma's one P5 past its allocation, the 10th to the 14th: 5 × 24 h × 55.04 = 6,604.80 USD.
GAMMA_OVER_COST = 6_604_800_000


def get_landing(client):
    return client.get(reverse("program-overview"))


@pytest.mark.django_db
def test_landing_orders_the_week_idle_first_and_shows_over_allocation_and_billed_gap(manager_client, story):
    response = get_landing(manager_client)
    assert response.status_code == 200
    last_week = response.context["glance"].weeks[0]
    assert last_week.period.first == date(2027, 3, 8)
    names = [row.organization.name for row in last_week.rows]
    assert names[0] == "Beta Lab"  # idle first
    beta = last_week.rows[0]
    assert beta.idle and beta.figures.running == 0
    gamma = next(row for row in last_week.rows if row.organization.name == "Gamma Lab")
    # The 10th to the 14th, beyond its allocation: 5 days × 24 h of one node, never netted against Beta's idle.
    assert gamma.over == 5 * 24 * 3_600_000_000
    assert gamma.over_cost == GAMMA_OVER_COST
    assert last_week.over == gamma.over and last_week.over_orgs == 1
    alpha = next(row for row in last_week.rows if row.organization.name == "Alpha Lab")
    assert alpha.billed.gap == Decimal("0.2") or abs(alpha.billed.gap - Decimal("0.2")) < Decimal("0.0001")
    assert alpha.billed.off and last_week.billed_off == 1
    assert last_week.settled_through == date(2027, 3, 12)
    text = response.text
    assert "billed through 03-12" in text
    assert "+20.0%" in text
    assert reverse("usage:org", args=["beta"]) + "?period=2027-W10" in text
    assert reverse("usage:program") + "?period=2027-W11" in text
    assert reverse("program-organizations") in text


@pytest.mark.django_db
def test_billed_gap_compares_only_settled_days(manager_client, story):
    """Computed cost after the last billed day is not compared: a full week of computed against five billed days
    would read as a −30% gap."""
    response = get_landing(manager_client)
    alpha = next(r for r in response.context["glance"].weeks[0].rows if r.organization.slug == "alpha")
    settled = 5 * ALPHA_DAY  # the 8th to the 12th: 5 × 2,641.92 = 13,209.60 USD
    assert alpha.billed.computed == settled
    assert alpha.figures.running_cost == 7 * ALPHA_DAY  # the whole week: two days more, not yet billed


@pytest.mark.django_db
def test_landing_lists_cases_incidents_allocations_and_requests(manager_client, story, p5):
    alpha, beta = story["alpha"], story["beta"]
    SupportCaseFactory(organization=alpha, title="Training stopped on 16 nodes", severity="s1")
    SupportCaseFactory(organization=alpha, title="A question about quotas", severity="s4")
    cluster = ClusterFactory(organization=beta, name="beta-trn", interconnect_suspect_since=NOW)
    ClusterFactory(organization=alpha, name="alpha-quiet", reporter_silent_since=NOW - timedelta(hours=2))
    ClusterFactory(organization=alpha, name="gone", status=Cluster.Status.DELETED, reporter_silent_since=NOW)
    HealthEventFactory(cluster=cluster, message="Xid 79 on GPU 3: GPU has fallen off the bus")
    CapacityRequestFactory(organization=beta, pool=p5, instance_count=3, submitted_at=NOW)
    CapacityRequestFactory(organization=beta, pool=p5, status=CapacityRequest.Status.DRAFT)
    response = get_landing(manager_client)
    glance = response.context["glance"]
    assert [c.title for c in glance.cases.items] == ["Training stopped on 16 nodes"]
    assert glance.incidents.count == 1
    assert [c.name for c in glance.suspect.items] == ["beta-trn"]
    assert [c.name for c in glance.silent.items] == ["alpha-quiet"]  # a deleted cluster is not silent
    assert [a.organization.slug for a in glance.ending.items] == ["beta"]  # ends on the 25th, within 14 days
    assert glance.requests.count == 1
    # Beta runs none of its Trn1: at the last 7 days' rate it ends with nothing used.
    assert [u.allocation.organization.slug for u in glance.underused] == ["beta"]
    text = response.text
    for link in (
        reverse("support:detail", args=[glance.cases.items[0].pk]),
        reverse("health:incidents"),
        reverse("validation:cluster", args=[cluster.pk]),
        reverse("review-queue"),
        reverse("allocations"),
    ):
        assert link in text
    # The top bar counts for staff: one open critical incident, one request waiting.
    assert response.context["nav_incidents"] == 1 and response.context["nav_review"] == 1


@pytest.mark.django_db
def test_landing_is_for_staff_only(member_client, support_client):
    response = member_client.get(reverse("program-overview"))
    assert response.status_code == 403
    assert support_client.get(reverse("program-overview")).status_code == 200


@pytest.mark.django_db
def test_landing_without_a_program(manager_client):
    response = manager_client.get(reverse("program-overview"))
    assert response.status_code == 200
    assert "No program is set up yet." in response.text


@pytest.mark.django_db
def test_tenants_get_no_staff_counts(member_client):
    response = member_client.get(reverse("home"), follow=True)
    assert "nav_incidents" not in response.context


def grow(program, p5, trn1, count: int, offset: int) -> None:
    """`count` more organizations, each with an allocation, usage, billed days, a case, an incident, a request."""
    for n in range(offset, offset + count):
        org = OrganizationFactory(name=f"Org {n:04d}", slug=f"org-{n:04d}")
        pool = p5 if n % 2 else trn1
        allocate(org, pool, 1, date(2027, 1, 1), date(2027, 3, 20 + n % 5), status=Allocation.Status.ACTIVE)
        run(org, pool.instance_type.api_name, jst(2027, 3, 1 + n % 10), last_seen=NOW, instance=f"i-{n}")
        BilledCost.objects.create(
            organization=org,
            day=date(2027, 3, 9),
            instance_type=pool.instance_type.api_name,
            cost_micro_usd=cost_micro_usd(3_600_000_000, Decimal(50)),
            fetched_at=NOW,
        )
        SupportCaseFactory(organization=org, severity="s1" if n % 2 else "s2")
        cluster = ClusterFactory(organization=org, reporter_silent_since=NOW, interconnect_suspect_since=NOW)
        HealthEventFactory(cluster=cluster)
        CapacityRequestFactory(organization=org, pool=pool, submitted_at=NOW)
    roll_up()


@pytest.mark.django_db
def test_landing_queries_do_not_grow_with_organizations(
    manager_client, program, p5, trn1, django_assert_max_num_queries
):
    grow(program, p5, trn1, 3, 0)
    with django_assert_max_num_queries(40) as few:
        assert get_landing(manager_client).status_code == 200
    grow(program, p5, trn1, 30, 3)
    with django_assert_max_num_queries(len(few.captured_queries)):
        response = get_landing(manager_client)
    assert response.status_code == 200
    week = response.context["glance"].weeks[1]
    assert week.organizations == 33 and len(week.rows) == 12 and week.more == 21


@pytest.mark.django_db
def test_allocations_no_longer_held_do_not_crowd_out_the_projection(manager_client, program, p5):
    """Seven organizations whose P5 allocations expired on the 15th ran none of them in the last 7 days: the
    least used pools of the program, but nothing is left to project. The one active allocation run a day out of
    its week is the one listed."""
    for n in range(7):
        ended = OrganizationFactory(name=f"Ended {n}", slug=f"ended-{n}")
        allocate(ended, p5, 4, date(2027, 3, 1), date(2027, 3, 15), status=Allocation.Status.EXPIRED)
    slow = OrganizationFactory(name="Slow Lab", slug="slow")
    allocate(slow, p5, 4, date(2027, 3, 1), date(2027, 6, 30), status=Allocation.Status.ACTIVE)
    run(slow, "p5.48xlarge", jst(2027, 3, 14, 9), jst(2027, 3, 15, 9), instance="s1")
    roll_up()
    glance = get_landing(manager_client).context["glance"]
    assert [u.allocation.organization.slug for u in glance.underused] == ["slow"]
    assert glance.underused[0].projected_share < Decimal("0.05")


def test_a_support_engineer_is_not_counted_requests_they_cannot_decide(client, org):
    """The review badge asks a program manager to act; a support engineer reads the queue but cannot approve."""
    from tenants.models import StaffRole
    from tests.factories import CapacityRequestFactory, StaffRoleFactory

    CapacityRequestFactory(organization=org)
    client.force_login(StaffRoleFactory(role=StaffRole.Role.SUPPORT_ENGINEER).user)
    page = client.get("/program/")
    assert "nav_review" not in page.context and 'title="Requests waiting for review"' not in page.text
    assert "nav_incidents" in page.context
    client.force_login(StaffRoleFactory(role=StaffRole.Role.PROGRAM_MANAGER).user)
    page = client.get("/program/")
    assert page.context["nav_review"] == 1 and 'title="Requests waiting for review"' in page.text
