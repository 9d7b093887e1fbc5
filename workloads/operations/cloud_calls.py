"""AWS calls per endpoint, written down and read back: which endpoint's recent calls fail or time out.

portal.cloud.calls counts each call's outcome in the process that made it; `flush` writes the counts after each
Celery task (a few rows per task, whatever the number of calls), and /healthz?deep=1 reads `failing_endpoints`.
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.db.models import F, Value
from django.db.models.functions import Coalesce, Greatest
from django.utils import timezone

from portal.cloud import calls
from workloads.operations.models import CloudCallTally

WINDOW = timedelta(minutes=5)  # "recent": what deep health looks at
PROBED = timedelta(hours=1)  # endpoints called within this are probed by deep health (portal.cloud.reachability)
KEEP = timedelta(days=1)  # rows older than this are deleted (the admin shows the last day)
_PRUNE_EVERY_SECONDS = 600
_last_prune = 0.0


def flush() -> int:
    """Write what this process counted since the last flush; returns the number of rows touched."""
    global _last_prune
    tallies = calls.drain()
    for tally in tallies:
        _add(tally)
    if tallies and time.monotonic() - _last_prune > _PRUNE_EVERY_SECONDS:
        _last_prune = time.monotonic()
        CloudCallTally.objects.filter(minute__lt=timezone.now() - KEEP).delete()
    return len(tallies)


def _add(tally: calls.Tally) -> None:
    """Add one process's counts to the minute's row: increments, so two workers writing the same row both count."""
    key = {"account": tally.account, "region": tally.region, "service": tally.service, "minute": tally.minute}
    changes: dict = {"calls": F("calls") + tally.calls, "failures": F("failures") + tally.failures}
    if tally.last_failure_at:
        changes["last_failure"] = tally.last_failure
        changes["last_failure_at"] = _later("last_failure_at", tally.last_failure_at)
    if tally.last_success_at:
        changes["last_success_at"] = _later("last_success_at", tally.last_success_at)
    if CloudCallTally.objects.filter(**key).update(**changes):
        return
    try:
        with transaction.atomic():
            CloudCallTally.objects.create(
                **key,
                calls=tally.calls,
                failures=tally.failures,
                last_failure=tally.last_failure,
                last_failure_at=tally.last_failure_at,
                last_success_at=tally.last_success_at,
            )
    except IntegrityError:  # another worker created the minute's row first
        CloudCallTally.objects.filter(**key).update(**changes)


def _later(field: str, moment: datetime):
    """The later of the row's `field` (if set) and `moment`."""
    return Greatest(Coalesce(field, Value(moment)), Value(moment))


def recent_endpoints(now: datetime | None = None) -> list[tuple[str, str]]:
    """(service, region) of every endpoint called in the last PROBED, whatever the account."""
    now = now or timezone.now()
    rows = CloudCallTally.objects.filter(minute__gte=now - PROBED).values_list("service", "region").distinct()
    return sorted(set(rows))


def failing_endpoints(now: datetime | None = None) -> list[dict]:
    """Endpoints called in the last WINDOW whose latest call failed, with how many of their calls failed."""
    now = now or timezone.now()
    endpoints: dict[tuple, dict] = {}
    for row in CloudCallTally.objects.filter(minute__gte=now - WINDOW).order_by("minute"):
        seen = endpoints.setdefault(
            (row.account, row.region, row.service),
            {"calls": 0, "failures": 0, "last_failure": "", "last_failure_at": None, "last_success_at": None},
        )
        seen["calls"] += row.calls
        seen["failures"] += row.failures
        if row.last_failure_at and (seen["last_failure_at"] is None or row.last_failure_at >= seen["last_failure_at"]):
            seen["last_failure"], seen["last_failure_at"] = row.last_failure, row.last_failure_at
        if row.last_success_at and (seen["last_success_at"] is None or row.last_success_at > seen["last_success_at"]):
            seen["last_success_at"] = row.last_success_at
    failing = []
    for (account, region, service), seen in sorted(endpoints.items()):
        if seen["last_failure_at"] is None:
            continue
        if seen["last_success_at"] is not None and seen["last_success_at"] > seen["last_failure_at"]:
            continue  # it failed, then answered again: recovered
        minutes = round(WINDOW.total_seconds() / 60)
        failing.append(
            {
                "service": service,
                "region": region,
                # A prefix only: /healthz answers anyone (the admin's AWS call tallies show the whole id).
                "account": f"{account[:4]}…" if account else "portal",
                "calls": seen["calls"],
                "failures": seen["failures"],
                "last_failure": seen["last_failure"],
                "summary": (
                    f"{service} {region} account {account[:4] + '…' if account else '(the portal’s own)'}: "
                    f"{seen['failures']} of {seen['calls']} calls failed in the last {minutes} min "
                    f"({seen['last_failure']})"
                ),
            }
        )
    return failing
