"""Cost Explorer: what AWS billed an organization's linked account, per day and instance type.

Called with the program's own credentials — the payer account, where Cost Explorer sees every linked account —
not a tenant's role: the program's role needs `ce:GetCostAndUsage`. Cost Explorer's days are UTC days.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from portal.cloud.errors import classify
from portal.cloud.session import CloudSession

COST_EXPLORER_REGION = "us-east-1"  # Cost Explorer has one endpoint


@dataclass(frozen=True)
class DailyCost:
    day: date
    instance_type: str
    usd: Decimal


@dataclass(frozen=True)
class CostReport:
    days: list[date]  # the days Cost Explorer answered for (with or without cost)
    costs: list[DailyCost]


def program_session() -> CloudSession:
    return CloudSession(boto3.Session(), region=COST_EXPLORER_REGION)


def daily_costs(
    *, account_id: str, start: date, end: date, instance_types: list[str], session: CloudSession | None = None
) -> CostReport:
    """Unblended cost per day and instance type of one linked account from `start` to `end` (inclusive)."""
    client = (session or program_session()).client("ce")
    request = {
        "TimePeriod": {"Start": start.isoformat(), "End": (end + timedelta(days=1)).isoformat()},
        "Granularity": "DAILY",
        "Metrics": ["UnblendedCost"],
        "GroupBy": [{"Type": "DIMENSION", "Key": "INSTANCE_TYPE"}],
        "Filter": {
            "And": [
                {"Dimensions": {"Key": "LINKED_ACCOUNT", "Values": [account_id]}},
                {"Dimensions": {"Key": "INSTANCE_TYPE", "Values": list(instance_types)}},
            ]
        },
    }
    costs: list[DailyCost] = []
    days: list[date] = []
    while True:
        try:
            answer = client.get_cost_and_usage(**request)
        except (ClientError, BotoCoreError) as error:
            raise classify(error) from error
        for period in answer.get("ResultsByTime", []):
            day = date.fromisoformat(period["TimePeriod"]["Start"])
            days.append(day)
            for group in period.get("Groups", []):
                amount = group.get("Metrics", {}).get("UnblendedCost", {}).get("Amount", "0")
                costs.append(DailyCost(day, group["Keys"][0], Decimal(amount)))
        if not answer.get("NextPageToken"):
            return CostReport(days, costs)
        request["NextPageToken"] = answer["NextPageToken"]
