"""Critical incidents and their time to repair, defined once: the funding body's reports read it (and the weekly
review and the API will, with node remediation).

An incident is a critical health event; it counts in the period it was observed in. Its time to repair runs from
when it was observed to when it was resolved (the node reported healthy again, or left the cluster); one still open
counts as open, never as repaired, and its time so far is not averaged in. Node-hours lost: the repair times of the
incidents repaired in the period, summed (one node each)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Count, DurationField, ExpressionWrapper, F, Max, Q, Sum

from workloads.health.models import HealthEvent


@dataclass(frozen=True)
class Repairs:
    incidents: int = 0
    repaired: int = 0
    repair_time: timedelta = timedelta(0)  # summed over the repaired ones
    longest: timedelta | None = None

    @property
    def open(self) -> int:
        return self.incidents - self.repaired

    @property
    def mean_hours(self) -> float | None:
        return self.repair_time.total_seconds() / 3600 / self.repaired if self.repaired else None

    @property
    def longest_hours(self) -> float | None:
        return None if self.longest is None else self.longest.total_seconds() / 3600

    @property
    def node_hours_lost(self) -> float:
        return self.repair_time.total_seconds() / 3600


def repairs_by_organization(organization_ids, *, starts_at: datetime, ends_at: datetime) -> dict[int, Repairs]:
    """Per organization: its critical incidents observed in [starts_at, ends_at) and how long their repair took.
    One grouped query."""
    took = ExpressionWrapper(F("resolved_at") - F("observed_at"), output_field=DurationField())
    # Repaired within the period: a report of a past month does not count a repair made after it as one.
    repaired = Q(resolved_at__isnull=False, resolved_at__lt=ends_at)
    rows = (
        HealthEvent.objects.filter(
            organization_id__in=list(organization_ids),
            severity=HealthEvent.Severity.CRITICAL,
            observed_at__gte=starts_at,
            observed_at__lt=ends_at,
        )
        .order_by()
        .values("organization_id")
        .annotate(
            incidents=Count("pk"),
            repaired=Count("pk", filter=repaired),
            repair_time=Sum(took, filter=repaired),
            longest=Max(took, filter=repaired),
        )
    )
    return {
        row["organization_id"]: Repairs(
            incidents=row["incidents"],
            repaired=row["repaired"],
            repair_time=row["repair_time"] or timedelta(0),
            longest=row["longest"],
        )
        for row in rows
    }
