"""The planner's optimization on generated queues: never over a pool-day (checked by the sweep), optimal (against
a brute force over every assignment of small cases), never below first-come-first-served."""

from __future__ import annotations

import itertools
from datetime import date, timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tenants.capacity.planning.solver import (
    SHARE_SCALE,
    Grant,
    PoolInput,
    Profile,
    RequestInput,
    candidates,
    first_come_first_served,
    options,
    solve,
)
from tenants.capacity.sweep import Span, usage_steps

TODAY = date(2030, 1, 1)
POOL_DAYS = 8


def pool_of(allocatable: int, used: list[int], pool_id: int = 1) -> PoolInput:
    ends_on = TODAY + timedelta(days=POOL_DAYS - 1)
    by_day = {TODAY + timedelta(days=i): n for i, n in enumerate(used) if n}
    return PoolInput(pool_id, allocatable, TODAY, ends_on, by_day)


@st.composite
def queues(draw, max_requests: int = 4, pools: int = 1):
    pool_inputs = {}
    for pool_id in range(1, pools + 1):
        allocatable = draw(st.integers(1, 5))
        used = draw(st.lists(st.integers(0, allocatable), min_size=POOL_DAYS, max_size=POOL_DAYS))
        pool_inputs[pool_id] = pool_of(allocatable, used, pool_id)
    requests = []
    for i in range(draw(st.integers(1, max_requests))):
        start = draw(st.integers(0, POOL_DAYS - 1))
        length = draw(st.integers(1, POOL_DAYS - start))
        requests.append(
            RequestInput(
                id=i + 1,
                organization_id=draw(st.integers(1, 3)),
                pool_id=draw(st.integers(1, pools)),
                instance_count=draw(st.integers(1, 3)),
                starts_on=TODAY + timedelta(days=start),
                ends_on=TODAY + timedelta(days=start + length - 1),
                start_slack_days=draw(st.integers(0, 2)),
            )
        )
    return requests, pool_inputs


def overcommitted(grants: dict[int, Grant], pools: dict[int, PoolInput], requests) -> list:
    """Pool-days over allocatable, by the sweep over the ledger's days and the grants."""
    found = []
    for pool in pools.values():
        spans = [Span(day, day, n) for day, n in pool.used.items()]
        spans += [
            Span(g.starts_on, g.ends_on, g.instance_count)
            for r in requests
            if r.pool_id == pool.id and (g := grants[r.id]).instance_count
        ]
        for step in usage_steps(spans, starts_on=pool.starts_on, ends_on=pool.ends_on):
            if sum(step.by_key.values()) > pool.allocatable:
                found.append((pool.id, step.starts_on))
    return found


def within_asked(grants, requests) -> bool:
    for r in requests:
        g = grants[r.id]
        if not g.instance_count:
            continue
        if g.instance_count > r.instance_count or g.ends_on - g.starts_on != r.ends_on - r.starts_on:
            return False
        if not 0 <= (g.starts_on - r.starts_on).days <= r.start_slack_days:
            return False
    return True


def test_a_later_window_is_considered_only_where_it_has_more_room():
    pool = pool_of(4, [3, 3, 1, 1, 0, 0, 0, 0])
    asked = RequestInput(1, 1, 1, 4, TODAY, TODAY + timedelta(days=1), start_slack_days=6)
    windows = candidates(asked, pool, Profile(pool, first=TODAY, last=pool.ends_on), today=TODAY)
    # As asked: room 1; one day later: still 1 (day 2 has 1 free... day 1 has 1): skipped; two days later: 3;
    # four days later: 4, the whole ask; nothing after that is considered.
    assert [(o.shift, room) for o, room in windows] == [(0, 1), (2, 3), (4, 4)]
    assert len(options(asked, pool, today=TODAY)) == 7


def queue_order_total(requests, pools) -> int:
    """First-come-first-served, on its own: in queue order each request gets, over its asked window (from today),
    as many of its instances as every day of it still has free, or none if the window leaves the pool."""
    load = {(pool.id, day): n for pool in pools.values() for day, n in pool.used.items()}
    total = 0
    for r in requests:
        pool = pools[r.pool_id]
        first = max(r.starts_on, TODAY)
        if r.ends_on > pool.ends_on or r.ends_on < first:
            continue
        days = [first + timedelta(days=i) for i in range((r.ends_on - first).days + 1)]
        n = max(min(r.instance_count, *(pool.allocatable - load.get((pool.id, d), 0) for d in days)), 0)
        for d in days:
            load[(pool.id, d)] = load.get((pool.id, d), 0) + n
        total += n * len(days)
    return total


def days_of(first: date, last: date) -> list[date]:
    return [first + timedelta(days=i) for i in range((last - first).days + 1)]


def moves_allowed(r, windows, pool, requests) -> list:
    """The README's rule on moves, applied on its own: of a request's windows in order, the first with room, then a
    later one only where it has more room than every earlier one — on the ledger alone, or with the other requests'
    asks (as asked, from today) counted too."""

    def others_asked(day: date) -> int:
        return sum(
            o.instance_count
            for o in requests
            if o is not r and o.pool_id == r.pool_id and max(o.starts_on, TODAY) <= day <= o.ends_on
        )

    kept, most_room, most_contended = [], 0, -1
    for first, last in windows:
        days = days_of(first, last)
        room = min(r.instance_count, *(pool.allocatable - pool.used.get(day, 0) for day in days))
        contended = min(room, *(pool.allocatable - pool.used.get(day, 0) - others_asked(day) for day in days))
        contended = max(contended, 0)
        if room > 0 and (not kept or room > most_room or contended > most_contended):
            kept.append((first, last))
        most_room, most_contended = max(most_room, room), max(most_contended, contended)
    return kept


def brute_force(requests, pools, *, fairness: str) -> tuple[int, int]:
    """(best floor, best total instance-days) by trying every assignment, using nothing of the solver's: each
    request left pending, or granted 1 to its asked instances on a window of its asked length starting on any day
    from its asked start to the end of its slack, within the pool's days and allowed by the rule on moves. Feasible
    when no pool-day holds more than allocatable, ledger included; kept when it grants at least what the queue
    order grants (goal 1); best by (the smallest organization share, the total), lexicographically — the fairness
    rule, goal by goal.
    """
    windows = {}
    for r in requests:
        pool = pools[r.pool_id]
        length = (r.ends_on - r.starts_on).days + 1
        every = [
            (start, start + timedelta(days=length - 1))
            for shift in range(r.start_slack_days + 1)
            if (start := r.starts_on + timedelta(days=shift)) >= max(pool.starts_on, TODAY)
            and start + timedelta(days=length - 1) <= pool.ends_on
        ]
        windows[r.id] = moves_allowed(r, every, pool, requests)

    def free(pool, first, last) -> int:
        return min(pool.allocatable - pool.used.get(day, 0) for day in days_of(first, last))

    asked, counted = {}, set()
    for r in requests:
        asked[r.organization_id] = asked.get(r.organization_id, 0) + r.instance_count * (
            (r.ends_on - r.starts_on).days + 1
        )
        # An organization counts in the minimum share if some request of it fits somewhere on the ledger alone.
        if any(free(pools[r.pool_id], first, last) > 0 for first, last in windows[r.id]):
            counted.add(r.organization_id)
    queue_total = queue_order_total(requests, pools)
    choices = [[None] + [(w, n) for w in windows[r.id] for n in range(1, r.instance_count + 1)] for r in requests]
    best = (-1, -1)
    for combo in itertools.product(*choices):
        load: dict = {}
        granted: dict = {}
        total = 0
        for r, pick in zip(requests, combo, strict=True):
            if pick is None:
                continue
            (first, last), n = pick
            days = (last - first).days + 1
            total += n * days
            granted[r.organization_id] = granted.get(r.organization_id, 0) + n * days
            for i in range(days):
                key = (r.pool_id, first + timedelta(days=i))
                load[key] = load.get(key, 0) + n
        if any(n + pools[pool_id].used.get(day, 0) > pools[pool_id].allocatable for (pool_id, day), n in load.items()):
            continue
        if total < queue_total:
            continue
        floor = 0
        if fairness == "maxmin":
            floor = min(
                (min(SHARE_SCALE, SHARE_SCALE * granted.get(org, 0) // asked[org]) for org in counted),
                default=SHARE_SCALE,
            )
        best = max(best, (floor, total))
    return best


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(queues(), st.sampled_from(["maxmin", "total"]))
def test_the_plan_is_optimal_never_overcommits_and_never_loses_to_the_queue_order(queue, fairness):
    requests, pools = queue
    solution = solve(requests, pools, today=TODAY, fairness=fairness, time_limit=10, workers=1)
    assert overcommitted(solution.grants, pools, requests) == []
    assert within_asked(solution.grants, requests)
    assert solution.granted >= solution.fcfs
    assert solution.granted == sum(g.instance_days for g in solution.grants.values())
    assert solution.status in ("OPTIMAL", "EMPTY")
    floor, total = brute_force(requests, pools, fairness=fairness)
    assert solution.granted == max(total, 0)
    if fairness == "maxmin" and solution.min_share is not None:
        assert round(solution.min_share * SHARE_SCALE) == floor


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(queues(max_requests=12, pools=2))
def test_larger_queues_never_overcommit_and_never_lose_to_the_queue_order(queue):
    requests, pools = queue
    solution = solve(requests, pools, today=TODAY, time_limit=5, workers=2)
    assert overcommitted(solution.grants, pools, requests) == []
    assert within_asked(solution.grants, requests)
    fcfs = first_come_first_served(requests, pools, today=TODAY)
    assert overcommitted(fcfs, pools, requests) == []
    assert solution.granted >= sum(g.instance_days for g in fcfs.values())


def test_a_shift_within_the_slack_takes_the_free_days():
    # Full on the first two days, empty after: a request with two days of slack is moved, one without is left.
    pools = {1: pool_of(4, [4, 4, 0, 0, 0, 0, 0, 0])}
    moved = RequestInput(1, 1, 1, 4, TODAY, TODAY + timedelta(days=2), start_slack_days=2)
    stuck = RequestInput(2, 2, 1, 2, TODAY, TODAY + timedelta(days=2))
    solution = solve([moved, stuck], pools, today=TODAY, time_limit=5, workers=1)
    assert solution.grants[1] == Grant(1, 4, TODAY + timedelta(days=2), TODAY + timedelta(days=4), 2)
    assert solution.grants[2].instance_count == 0
    assert solution.status == "OPTIMAL"


def test_max_min_lifts_the_worst_served_organization_before_the_total():
    # 4 free instances over 2 days; two organizations ask 4 × 2 days each. Queue order gives all to the first
    # (its share 1, the other's 0); max-min gives each half, granting as much in total.
    pools = {1: pool_of(4, [0] * POOL_DAYS)}
    first = RequestInput(1, 1, 1, 4, TODAY, TODAY + timedelta(days=1))
    second = RequestInput(2, 2, 1, 4, TODAY, TODAY + timedelta(days=1))
    fair = solve([first, second], pools, today=TODAY, fairness="maxmin", time_limit=5, workers=1)
    total = solve([first, second], pools, today=TODAY, fairness="total", time_limit=5, workers=1)
    assert total.granted == fair.granted == 8  # the pool is full either way
    assert fair.grants[2].instance_count == 2 and fair.grants[1].instance_count == 2
    assert fair.min_share == 0.5
    assert total.fcfs == 8 and first_come_first_served([first, second], pools, today=TODAY)[2].instance_count == 0


def test_what_if_growth_makes_room():
    pools = {1: pool_of(2, [2] * POOL_DAYS)}
    asked = RequestInput(1, 1, 1, 3, TODAY + timedelta(days=3), TODAY + timedelta(days=5))
    assert solve([asked], pools, today=TODAY, time_limit=5, workers=1).granted == 0
    grown = {1: PoolInput(1, 2, pools[1].starts_on, pools[1].ends_on, pools[1].used, ((TODAY + timedelta(days=3), 3),))}
    assert solve([asked], grown, today=TODAY, time_limit=5, workers=1).grants[1].instance_count == 3


def test_a_forced_request_is_granted_as_asked_and_displaces_others():
    pools = {1: pool_of(4, [0] * POOL_DAYS)}
    first = RequestInput(1, 1, 1, 4, TODAY, TODAY + timedelta(days=1))
    forced = RequestInput(2, 2, 1, 3, TODAY, TODAY + timedelta(days=1), forced=True)
    solution = solve([first, forced], pools, today=TODAY, time_limit=5, workers=1)
    assert solution.grants[2].instance_count == 3
    assert solution.grants[1].instance_count == 1
