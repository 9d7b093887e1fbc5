"""The program's figures as the portal's pages, exports and API read them, in plain values a test can compare
between two databases (a backup and its restore; a database before and after an upgrade)."""

from __future__ import annotations

from datetime import datetime

from django.db.models import Count, Sum
from django.db.models.functions import TruncWeek

from tenants.capacity.models import PoolDay
from tenants.models import Allocation, AuditEvent, Membership
from workloads.support.models import SupportCase
from workloads.training.figures import run_figures
from workloads.training.models import TrainingRun
from workloads.usage.allocations import allocation_use
from workloads.usage.models import BilledCost, UsageDay, UsageWeek
from workloads.usage.reports import summed, summed_summaries


def usage_by_org_week() -> dict:
    """Usage and cost per organization and ISO week, summed from the daily rows (reports.summed, which the
    organization's pages and CSV read)."""
    rows = UsageDay.objects.annotate(week=TruncWeek("day"))
    return {key: vars(figures) for key, figures in summed(rows, "organization__slug", "week").items()}


def week_summaries() -> dict:
    """The same from the weekly summaries the program's pages read (reports.summed_summaries over UsageWeek)."""
    return {
        key: vars(figures)
        for key, figures in summed_summaries(UsageWeek.objects.all(), "organization__slug", "week").items()
    }


def allocations(*, as_of: datetime) -> list[tuple]:
    """Each allocation, granted and used as the capacity pages show it (usage.allocations.allocation_use)."""
    found = list(Allocation.objects.select_related("organization", "pool").order_by("pk"))
    uses = allocation_use(found, as_of=as_of)
    return [
        (
            a.organization.slug,
            a.pool_id,
            a.starts_on,
            a.ends_on,
            a.instance_count,
            a.status,
            a.instance_hours,
            uses[a.pk].granted,
            uses[a.pk].allocated,
            uses[a.pk].running,
            uses[a.pk].remaining,
            uses[a.pk].unused,
        )  # fmt: skip
        for a in found
    ]


def program_figures(*, as_of: datetime) -> dict:
    """Every figure a restore or an upgrade must keep: usage and cost, allocations, the pool ledger, billed cost,
    the audit trail, training progress, members and support cases."""
    runs = list(TrainingRun.objects.select_related("workload").order_by("pk"))
    training = {
        pk: (f.tokens, f.planned_tokens, f.tokens_per_second, f.mfu, f.productive_hours, f.lost_hours, f.skipped_hours)
        for pk, f in run_figures(runs, now=as_of).items()
    }
    return {
        "usage": usage_by_org_week(),
        "week summaries": week_summaries(),
        "allocations": allocations(as_of=as_of),
        "pool ledger": list(PoolDay.objects.order_by("pool_id", "day").values_list("pool_id", "day", "allocated")),
        "billed": list(
            BilledCost.objects.values_list("organization__slug")
            .annotate(Sum("cost_micro_usd"))
            .order_by("organization__slug")
        ),
        "audit trail": list(
            AuditEvent.objects.order_by("pk").values_list(
                "pk",
                "organization__slug",
                "actor__username",
                "action",
                "target_type",
                "target_id",
                "changes",
                "comment",
                "created_at",
            )  # fmt: skip
        ),
        "training": training,
        "members": list(Membership.objects.values_list("organization__slug", "user__username", "role").order_by("pk")),
        "support cases": list(
            SupportCase.objects.values_list("organization__slug", "status")
            .annotate(Count("pk"))
            .order_by("organization__slug", "status")
        ),
    }
