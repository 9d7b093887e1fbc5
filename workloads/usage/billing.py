"""What AWS billed each organization for its accelerator instances (Cost Explorer), kept beside the computed
cost so the dashboard can show both and flag a gap. Cost Explorer settles a few days late, so every run
re-reads the last two weeks and replaces them."""

from __future__ import annotations

import logging
from datetime import timedelta
from decimal import Decimal

from django.db import transaction
from django.utils import timezone

from portal import cloud
from portal.cloud.costs import daily_costs
from portal.periods import days_between, today
from tenants.models import CapacityPool, Organization
from workloads.usage import summaries
from workloads.usage.definitions import micro_usd_to_the_cent
from workloads.usage.models import BilledCost

log = logging.getLogger(__name__)
REREAD_DAYS = 14


def pool_instance_types() -> list[str]:
    return sorted(set(CapacityPool.objects.values_list("instance_type__api_name", flat=True)))


def fetch_billed_costs(*, days: int = REREAD_DAYS, session=None) -> dict[str, int]:
    """For every organization with a linked AWS account: its daily cost per instance type over the last
    `days`. One organization's failure is logged and never stops the others; a transient one is raised
    at the end so the task retries."""
    types = pool_instance_types()
    end = today() - timedelta(days=1)
    start = end - timedelta(days=days - 1)
    outcome = {"organizations": 0, "rows": 0, "errors": 0}
    transient = None
    for org in Organization.objects.exclude(aws_account_id="").order_by("pk"):
        try:
            report = daily_costs(
                account_id=org.aws_account_id, start=start, end=end, instance_types=types, session=session
            )
        except cloud.TransientCloudError as error:
            transient, outcome["errors"] = error, outcome["errors"] + 1
            continue
        except cloud.CloudError as error:
            outcome["errors"] += 1
            log.warning("Cost Explorer refused %s: %s", org.slug, error.message)
            continue
        with transaction.atomic():
            BilledCost.objects.for_org(org).filter(day__in=report.days).delete()
            now = timezone.now()
            BilledCost.objects.bulk_create(
                BilledCost(
                    organization=org,
                    day=cost.day,
                    instance_type=cost.instance_type,
                    cost_micro_usd=micro_usd_to_the_cent(cost.usd),  # to the cent, as every figure (definitions)
                    fetched_at=now,
                )
                for cost in report.costs
                if cost.usd != Decimal(0)
            )
        outcome["organizations"] += 1
        outcome["rows"] += len(report.costs)
    if outcome["organizations"]:
        # The latest day billed settles its week for every organization: their weeks' billed checks are summed again.
        with transaction.atomic():
            summaries.lock()
            summaries.refresh(days_between(start, end))
    if transient is not None:
        raise transient
    return outcome
