"""An organization's week at a glance (its home page, `/orgs/<slug>/`): the one-minute answer the program manager
gets on `/program/`, for one tenant team. Last week and this week so far against the allocation (the landing
page's own figures, week_glance, read for this organization only), each active allocation's burn-down with its
projection, the requests and their state, the clusters and their health, open incidents, the cases waiting for
the team, and the training runs against plan.

Every part is a fixed number of queries, however many clusters, cases or days the organization has."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal

from django.db.models import Case, Count, F, Q, Value, When

from tenants.capacity.allocations import allocation_rows
from tenants.models import Allocation, CapacityRequest, Organization, Program
from workloads.clusters.models import Cluster
from workloads.health.models import HealthEvent
from workloads.program.burndown import burn_down
from workloads.program.week import Listing, WeekGlance, listing, week_glance
from workloads.support.models import SupportCase
from workloads.training.program import WorkloadTraining, organization_training
from workloads.usage.allocations import allocation_use
from workloads.usage.models import BilledCost, UsageDay, UsageWeek
from workloads.usage.periods import Period

# Requests the team still has something to do with or wait for: drafts to send, submissions under review.
OPEN_REQUESTS = (CapacityRequest.Status.DRAFT, CapacityRequest.Status.SUBMITTED)
RECENT_DECISIONS = 3  # the last decisions shown under them
TROUBLED_FIRST = Case(  # failed and degraded clusters, then those in flight, then the ones in service
    When(status__in=[Cluster.Status.FAILED, Cluster.Status.DEGRADED], then=Value(0)),
    When(status=Cluster.Status.IN_SERVICE, then=Value(2)),
    default=Value(1),
)
WORST_FIRST = Case(
    When(severity=HealthEvent.Severity.CRITICAL, then=Value(0)),
    When(severity=HealthEvent.Severity.WARNING, then=Value(1)),
    default=Value(2),
)


@dataclass
class TenantWeek:
    weeks: list[WeekGlance]
    allocation_rows: list[dict]
    burn_downs: list
    requests: Listing
    decided: list[CapacityRequest]
    clusters: Listing
    incidents: Listing
    waiting: Listing  # cases waiting on the team
    cases: Listing  # every other active case
    training: list[WorkloadTraining]

    @property
    def attention(self) -> int:
        """What waits for the team: cases waiting on them and drafts not yet sent."""
        drafts = sum(1 for r in self.requests.items if r.status == CapacityRequest.Status.DRAFT)
        return self.waiting.count + drafts


def tenant_week(org: Organization, *, program: Program | None, weeks: list[Period], today: date, as_of: datetime):
    threshold = program.idle_threshold if program else Decimal("0.5")
    week_glances = [
        week_glance(
            period=period,
            week_rows=UsageWeek.objects.for_org(org),
            usage_rows=UsageDay.objects.for_org(org),
            billed_rows=BilledCost.objects.for_org(org),
            threshold=threshold,
        )
        for period in weeks
    ]
    current = list(
        Allocation.objects.for_org(org)
        .filter(status__in=[Allocation.Status.SCHEDULED, Allocation.Status.ACTIVE])
        .select_related("pool__instance_type")
        .order_by("starts_on", "pk")
    )
    running = [a for a in current if a.status == Allocation.Status.ACTIVE and a.starts_on <= today <= a.ends_on]
    uses = allocation_use(running, as_of=as_of)
    requests = CapacityRequest.objects.for_org(org).select_related("pool__instance_type")
    clusters = listing(
        Cluster.objects.for_org(org).exclude(status=Cluster.Status.DELETED).order_by(TROUBLED_FIRST, "name", "pk")
    )
    count_incidents(org, clusters.items)
    active_cases = SupportCase.objects.for_org(org).filter(status__in=SupportCase.ACTIVE_STATUSES)
    return TenantWeek(
        weeks=week_glances,
        allocation_rows=allocation_rows(current, on=today),
        burn_downs=[burn_down(uses[a.pk], today=today) for a in running if a.pk in uses],
        requests=listing(requests.filter(status__in=OPEN_REQUESTS).order_by("status", "created_at", "pk")),
        decided=list(
            requests.exclude(status__in=OPEN_REQUESTS).order_by(F("decided_at").desc(nulls_last=True), "-pk")[
                :RECENT_DECISIONS
            ]
        ),
        clusters=clusters,
        incidents=listing(
            HealthEvent.objects.for_org(org)
            .filter(resolved_at=None)
            .select_related("cluster", "case")
            .order_by(WORST_FIRST, "observed_at", "pk")
        ),
        waiting=listing(
            active_cases.filter(status=SupportCase.Status.WAITING_ON_TENANT).order_by("severity", "updated_at", "pk")
        ),
        cases=listing(
            active_cases.exclude(status=SupportCase.Status.WAITING_ON_TENANT).order_by("severity", "created_at", "pk")
        ),
        training=organization_training(org, now=as_of),
    )


def count_incidents(org: Organization, clusters: list[Cluster]) -> None:
    """Each listed cluster's open incidents and how many are critical (`open_incidents`, `critical_incidents`), in
    one grouped read."""
    counts = {
        row["cluster_id"]: row
        for row in HealthEvent.objects.for_org(org)
        .filter(cluster__in=clusters, resolved_at=None)
        .order_by()
        .values("cluster_id")
        .annotate(open=Count("pk"), critical=Count("pk", filter=Q(severity=HealthEvent.Severity.CRITICAL)))
    }
    for cluster in clusters:
        row = counts.get(cluster.pk, {})
        cluster.open_incidents, cluster.critical_incidents = row.get("open", 0), row.get("critical", 0)
