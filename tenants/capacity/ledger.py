"""The pool ledger: per pool and day, the instances allocated (PoolDay). Every allocation change moves it in
the same transaction — approve, trim, extend, enlarge (a new allocation), revoke, delete — through the model
signals below, so no code path can forget it; services hold the pool row lock while they change allocations,
which serializes the ledger's writers per pool. Headroom, the bottleneck day and the invariant read it in
O(days of the window), never O(allocations). `manage.py rebuild_pool_ledger` rebuilds it from the
allocations and reports any difference.

An allocation holds capacity on every day of its window unless it is revoked (expired ones lie in the past).
"""

from __future__ import annotations

from collections import defaultdict
from datetime import date, timedelta

from django.db import transaction
from django.db.models import F
from django.db.models.signals import post_delete, post_save, pre_save
from django.dispatch import receiver

from portal.periods import days_between
from tenants.capacity.models import PoolDay
from tenants.capacity.sweep import Peak
from tenants.models import Allocation

ONE_DAY = timedelta(days=1)
Held = tuple[int, date, date, int]  # pool, first day, last day, instances


def held(allocation: Allocation) -> Held | None:
    if allocation.status == Allocation.Status.REVOKED:
        return None
    return allocation.pool_id, allocation.starts_on, allocation.ends_on, allocation.instance_count


def move(pool_id: int, first: date, last: date, delta: int) -> None:
    """Add `delta` instances to the pool on every day from `first` to `last`: two statements whatever the size."""
    if not delta or last < first:
        return
    PoolDay.objects.bulk_create(
        [PoolDay(pool_id=pool_id, day=day) for day in days_between(first, last)], ignore_conflicts=True
    )
    PoolDay.objects.filter(pool_id=pool_id, day__gte=first, day__lte=last).update(allocated=F("allocated") + delta)


@receiver(pre_save, sender=Allocation, dispatch_uid="ledger-before")
def _before(sender, instance: Allocation, raw=False, **kwargs) -> None:
    instance._ledger_before = None
    if instance.pk is not None and not raw:
        row = Allocation.objects.filter(pk=instance.pk).first()
        instance._ledger_before = held(row) if row is not None else None


@receiver(post_save, sender=Allocation, dispatch_uid="ledger-after")
def _after(sender, instance: Allocation, raw=False, **kwargs) -> None:
    if raw:
        return
    before, after = getattr(instance, "_ledger_before", None), held(instance)
    if before == after:
        return
    with transaction.atomic():
        if before is not None:
            move(before[0], before[1], before[2], -before[3])
        if after is not None:
            move(after[0], after[1], after[2], after[3])


@receiver(post_delete, sender=Allocation, dispatch_uid="ledger-deleted")
def _deleted(sender, instance: Allocation, **kwargs) -> None:
    if (was := held(instance)) is not None:
        move(was[0], was[1], was[2], -was[3])


# --- Reading ---------------------------------------------------------------------------------------------------


def allocated_by_day(pool_ids, *, first: date, last: date) -> dict[int, dict[date, int]]:
    """Per pool, the instances allocated on each day of the window that has any (one query, O(pools × days))."""
    found: dict[int, dict[date, int]] = {pk: {} for pk in pool_ids}
    rows = PoolDay.objects.filter(pool_id__in=list(pool_ids), day__gte=first, day__lte=last, allocated__gt=0)
    for pool_id, day, allocated in rows.values_list("pool_id", "day", "allocated"):
        found[pool_id][day] = allocated
    return found


def peak_in(by_day: dict[date, int], *, first: date, last: date) -> Peak:
    """The busiest day of the window (the first one, on a tie); no allocation: 0 on the first day."""
    peak = Peak(used=0, on=first)
    for day in sorted(d for d in by_day if first <= d <= last):
        if by_day[day] > peak.used:
            peak = Peak(used=by_day[day], on=day)
    return peak


# --- Rebuilding ------------------------------------------------------------------------------------------------


def expected() -> dict[tuple[int, date], int]:
    """The ledger as the allocations say it should be: a sweep over their start and end days per pool."""
    deltas: dict[int, dict[date, int]] = defaultdict(lambda: defaultdict(int))
    holding = Allocation.objects.holding_capacity().values_list("pool_id", "starts_on", "ends_on", "instance_count")
    for pool_id, first, last, count in holding:
        deltas[pool_id][first] += count
        deltas[pool_id][last + ONE_DAY] -= count
    totals: dict[tuple[int, date], int] = {}
    for pool_id, changes in deltas.items():
        running, marks = 0, sorted(changes)
        for day, next_change in zip(marks, marks[1:], strict=False):
            running += changes[day]
            if running:
                totals.update({(pool_id, d): running for d in days_between(day, next_change - ONE_DAY)})
    return totals


def differences() -> dict[tuple[int, date], tuple[int, int]]:
    """(pool, day) → (in the ledger, from the allocations), where the two differ."""
    want = expected()
    have = {(p, d): n for p, d, n in PoolDay.objects.values_list("pool_id", "day", "allocated") if n}
    return {
        key: (have.get(key, 0), want.get(key, 0)) for key in set(want) | set(have) if have.get(key) != want.get(key)
    }


@transaction.atomic
def rebuild() -> int:
    """Replace the ledger by what the allocations say (bulk loads, repairs); returns the rows written."""
    PoolDay.objects.all().delete()
    rows = [PoolDay(pool_id=pool_id, day=day, allocated=n) for (pool_id, day), n in sorted(expected().items()) if n]
    PoolDay.objects.bulk_create(rows, batch_size=5_000)
    return len(rows)
