"""An organization's home (/orgs/<slug>/): the tenant team's week — use and cost against the allocation with its
burn-down, requests, clusters and incidents, the cases waiting for the team, training against plan; and the top
bar's count of what waits for them. Figures computed by hand from the story below."""

import json
from datetime import date

import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from tenants.models import Allocation, CapacityRequest
from tests.factories import (
    CapacityRequestFactory,
    ClusterFactory,
    HealthEventFactory,
    SupportCaseFactory,
)
from tests.usage.conftest import allocate, jst, run
from workloads.clusters.models import Cluster
from workloads.support.models import SupportCase
from workloads.usage import rollups

NOW = jst(
    2027, 3, 17, 9
)  # a Wednesday: last week is 2027-W10 (Mar 8–14), this week so far Mar 15 00:00 to 09:00 on the 17th

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def on_wednesday():
    with time_machine.travel(NOW, tick=False):
        yield


@pytest.fixture
def story(program, p5, org, other_org):
    """Alpha holds 2 P5 for the program's half year (Jan 1 – Jun 30: 181 days) and runs both since Mar 1;
    a draft and a submitted request, one approved earlier; a case waiting for Alpha and one open; a degraded
    cluster with a critical incident. Beta has its own of each, none of which Alpha may see."""
    allocate(org, p5, 2, date(2027, 1, 1), date(2027, 6, 30), status=Allocation.Status.ACTIVE)
    for slot in range(2):
        run(org, "p5.48xlarge", jst(2027, 3, 1), last_seen=NOW, instance=f"a{slot}")
    rollups.mark_everything()
    rollups.roll_up()
    draft = CapacityRequestFactory(organization=org, pool=p5, status=CapacityRequest.Status.DRAFT)
    submitted = CapacityRequestFactory(organization=org, pool=p5, submitted_at=NOW)
    CapacityRequestFactory(organization=org, pool=p5, status=CapacityRequest.Status.APPROVED, decided_at=NOW)
    waiting = SupportCaseFactory(organization=org, title="Send us the NCCL log", status="waiting_on_tenant")
    SupportCaseFactory(organization=org, title="FSx throughput", severity=SupportCase.Severity.S3)
    cluster = ClusterFactory(organization=org, name="alpha-p5", status=Cluster.Status.DEGRADED)
    HealthEventFactory(cluster=cluster, message="Xid 79 on GPU 3: GPU has fallen off the bus")
    beta_cluster = ClusterFactory(organization=other_org, name="beta-secret-cluster")
    HealthEventFactory(cluster=beta_cluster)
    SupportCaseFactory(organization=other_org, title="Beta's private case", status="waiting_on_tenant")
    CapacityRequestFactory(organization=other_org, pool=p5, status=CapacityRequest.Status.DRAFT)
    return {"draft": draft, "submitted": submitted, "waiting": waiting, "cluster": cluster}


def home(client, org):
    return client.get(reverse("org-home", args=[org.slug]))


def test_the_week_against_the_allocation_in_figures_computed_by_hand(member_client, org, story):
    page = home(member_client, org)
    assert page.status_code == 200
    last, this = page.context["week"].weeks
    # Last week, Mar 8–14: 2 instances × 7 days × 24 h = 336 instance-h allocated and ran, at the catalog's $55.04.
    assert last.figures.allocated == last.figures.running == 336 * 3_600_000_000
    assert last.figures.running_cost == 336 * 55_040_000  # $18,493.44 in micro-dollars
    # This week so far, Mar 15 00:00 to Mar 17 09:00: 57 h × 2 = 114 instance-h, $6,274.56.
    assert this.figures.running == 114 * 3_600_000_000 and this.figures.running_cost == 114 * 55_040_000
    text = page.text
    assert "$18,493.44" in text and "$6,274.56" in text and "100.0%" in text


def test_the_burn_down_counts_down_the_grant_and_projects_at_the_recent_rate(member_client, org, story):
    """Granted 2 × 24 h × 181 days = 8,688 instance-h. Ran through the 16th: 16 days × 48 = 768, so 7,920 left.
    The last 7 days (the 11th 00:00 to now, 6.375 days) ran 306 h: 48 h a day, so by Jun 30 (106 days from the 17th
    on) 7,920 − 106 × 48 = 2,832 are left; even use would leave none."""
    charts = page_charts(home(member_client, org))
    assert len(charts) == 2  # the half year's, and the one the cluster was made from (a week ago, for 60 days)
    (chart,) = [chart for chart in charts if chart["option"]["xAxis"]["data"][0] == "01-01"]
    option = chart["option"]
    left, projected, even = (series["data"] for series in option["series"])
    days = option["xAxis"]["data"]
    assert len(days) == 181 and days[0] == "01-01" and days[-1] == "06-30"
    yesterday = days.index("03-16")
    assert left[yesterday] == 7920.0 and left[yesterday + 1] is None
    assert projected[yesterday] == 7920.0  # the projection starts on the line
    assert projected[-1] == 2832.0 and even[-1] == 0.0
    assert left[0] == 8688.0 - 0  # nothing ran on Jan 1
    text = home(member_client, org).text
    assert (
        '<th scope="row">2027-06-30</th><td class="num">—</td><td class="num">2,832</td><td class="num">0</td>' in text
    )


def page_charts(page) -> list[dict]:
    import re

    scripts = re.findall(r'<script id="chart-burn-down-\d+" type="application/json">(.*?)</script>', page.text)
    return [json.loads(script) for script in scripts]


def test_what_waits_for_the_team_and_what_is_broken_and_nothing_of_another_org(member_client, org, story):
    text = home(member_client, org).text
    requests, clusters, waiting = (
        text.split(f'data-testid="{part}"')[1] for part in ("org-requests", "org-clusters", "org-waiting")
    )
    assert story["draft"].number in requests and "not sent yet" in requests
    assert story["submitted"].number in requests and "Submitted" in requests
    assert requests.index(story["draft"].number) < requests.index(story["submitted"].number)  # drafts first
    assert "Decided lately" in requests and "Approved" in requests
    assert "alpha-p5" in clusters and "Degraded" in clusters and "1 critical" in clusters
    assert "Xid 79 on GPU 3: GPU has fallen off the bus" in clusters
    assert "Send us the NCCL log" in waiting.split("Other open cases")[0]
    assert "FSx throughput" in waiting.split("Other open cases")[1]
    for secret in ("beta-secret-cluster", "Beta's private case"):
        assert secret not in text
    # The top bar: one case waiting for Alpha's answer and one draft not sent.
    assert member_client.get("/clusters/").context["nav_waiting"] == {org.pk: 2}


def test_the_home_page_issues_the_same_queries_with_more_of_everything(member_client, org, story, p5):
    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert home(member_client, org).status_code == 200
        return len(queries)

    before = count()
    for n in range(15):
        cluster = ClusterFactory(organization=org, name=f"more-{n}", status=Cluster.Status.DEGRADED)
        HealthEventFactory(cluster=cluster)
        SupportCaseFactory(organization=org, status="waiting_on_tenant")
        CapacityRequestFactory(organization=org, pool=p5, status=CapacityRequest.Status.DRAFT)
    assert count() == before


def test_an_organization_with_nothing_yet_says_so(member_client, org):
    text = home(member_client, org).text
    for empty in ("No usage in this week.", "No case waits for your answer.", "No cluster yet.",
                  "No open incident.", "No request is open."):  # fmt: skip
        assert empty in text
