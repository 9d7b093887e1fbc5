"""The capacity planner's optimization, on plain values: which pending requests to approve — as asked, trimmed
to fewer instances, or moved later within their slack — so that no pool-day goes over its allocatable capacity,
under a fairness rule, granting as many instance-days as possible. OR-Tools' CP-SAT solver does the search.

Days are compressed: only the days where a pool's free capacity or a request's window (at any of its shifts)
begins or ends matter, so each pool is a list of segments between those breakpoints, with the fewest instances
free on any day of the segment, and a request holds capacity on whole segments.

Fairness ("maxmin", the default), lexicographic over three goals:
1. never grant fewer instance-days in total than first-come-first-served does (queue order, each request as
   asked or trimmed to what is free over its own window);
2. within that, make the smallest share granted ÷ asked of any organization as large as possible (organizations
   with a weight w count their share as share ÷ w, so weight 2 asks for twice the share before others gain);
   an organization none of whose requests fits anywhere is left out of this minimum;
3. then grant as many instance-days as possible without lowering that minimum.
"total" skips goal 2. Each goal is a solve; the first-come-first-served plan is the solver's hint and fallback.
"""

from __future__ import annotations

import time
from bisect import bisect_right
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, timedelta

from ortools.sat.python import cp_model

ONE_DAY = timedelta(days=1)
SHARE_SCALE = 1000  # shares in per mille: the solver works in integers
FAIRNESS_RULES = ("maxmin", "total")


@dataclass(frozen=True)
class PoolInput:
    id: int
    allocatable: int
    starts_on: date
    ends_on: date
    used: dict[date, int]  # the ledger: instances allocated per day (days with none left out)
    growth: tuple[tuple[date, int], ...] = ()  # what-if: (from day, more allocatable instances)

    def allocatable_on(self, day: date) -> int:
        return self.allocatable + sum(k for since, k in self.growth if day >= since)


@dataclass(frozen=True)
class RequestInput:
    id: int
    organization_id: int
    pool_id: int
    instance_count: int
    starts_on: date
    ends_on: date
    start_slack_days: int = 0
    forced: bool = False  # what-if: approved as asked, whatever it costs the others


@dataclass(frozen=True)
class Option:
    """One window a request may be granted in: its asked one moved `shift` days later (the first day not before
    today: a late approval starts today, as the approval service does)."""

    shift: int
    starts_on: date
    ends_on: date

    @property
    def days(self) -> int:
        return (self.ends_on - self.starts_on).days + 1


@dataclass(frozen=True)
class Grant:
    request_id: int
    instance_count: int  # 0: left pending
    starts_on: date | None = None
    ends_on: date | None = None
    shift: int = 0

    @property
    def instance_days(self) -> int:
        return 0 if not self.instance_count else self.instance_count * ((self.ends_on - self.starts_on).days + 1)


@dataclass
class Solution:
    grants: dict[int, Grant]
    status: str  # OPTIMAL, FEASIBLE (with a gap), FCFS (the fallback), EMPTY
    granted: int  # instance-days
    bound: int  # the solver's upper bound on goal 3 (instance-days)
    fcfs: int  # instance-days first-come-first-served grants
    min_share: float | None  # the smallest organization share (goal 2), None if no organization counts
    seconds: float
    fairness: str
    notes: list[str] = field(default_factory=list)

    @property
    def gap(self) -> float:
        """How far the plan may be from the best possible total: (bound − granted) ÷ bound."""
        return 0.0 if not self.bound else max(self.bound - self.granted, 0) / self.bound


def options(request: RequestInput, pool: PoolInput, *, today: date) -> list[Option]:
    """The windows a request may be granted in: as asked, then each day later within its slack that keeps the
    window in the pool's. A request starting before today starts today; its slack counts from the asked day."""
    found = []
    late = max((today - request.starts_on).days, 0)
    for shift in range(0 if request.forced else request.start_slack_days + 1):
        if shift and shift < late:
            continue  # moved less than the days already gone: the same window as a smaller shift
        first = max(request.starts_on + timedelta(days=shift), today)
        last = request.ends_on + timedelta(days=shift)
        if last > pool.ends_on or last < first:
            break
        found.append(Option(shift, first, last))
    if request.forced:
        first = max(request.starts_on, today)
        found = [Option(0, first, request.ends_on)] if request.ends_on >= first else []
    return found


class Profile:
    """A pool's free capacity by day, as a step function, with the minimum over any window in O(log n + k)."""

    def __init__(self, pool: PoolInput, *, first: date, last: date):
        self.pool = pool
        changes = {first, last + ONE_DAY}
        for day in pool.used:
            if first <= day <= last:
                changes.add(day)
                changes.add(day + ONE_DAY)
        for since, _k in pool.growth:
            if first <= since <= last:
                changes.add(since)
        self.marks = sorted(d for d in changes if first <= d <= last + ONE_DAY)
        self.free = [pool.allocatable_on(d) - pool.used.get(d, 0) for d in self.marks[:-1]]

    def min_free(self, first: date, last: date) -> int:
        i = max(bisect_right(self.marks, first) - 1, 0)
        j = bisect_right(self.marks, last)
        return min(self.free[i:j]) if j > i else 0


def asked_demand(requests: list[RequestInput], *, today: date) -> dict[int, dict[date, int]]:
    """Per pool and day, the instances the queue asks for as asked: the contention a later window may avoid."""
    demand: dict[int, dict[date, int]] = defaultdict(lambda: defaultdict(int))
    for request in requests:
        day = max(request.starts_on, today)
        while day <= request.ends_on:
            demand[request.pool_id][day] += request.instance_count
            day += ONE_DAY
    return demand


def candidates(
    request: RequestInput, pool: PoolInput, profile: Profile, *, today: date, demand: dict[date, int] | None = None
) -> list[tuple[Option, int]]:
    """The windows the plan considers for a request, with the most instances each could hold on the ledger alone.
    The asked window; and a later one within the slack only where it has more room than every earlier one, on the
    ledger alone or once the rest of the queue's asks (`demand`, from asked_demand) are counted too: a request is
    never moved to a window no better than one it could have had sooner. A forced request (what-if) is
    considered only as asked, and only if it fits."""
    own_first = max(request.starts_on, today)
    found, best, best_contended = [], 0, -1
    for option in options(request, pool, today=today):
        room = min(request.instance_count, profile.min_free(option.starts_on, option.ends_on))
        if request.forced and room < request.instance_count:
            return []
        contended = room
        if demand is not None and room > 0:
            day, contended = option.starts_on, room
            while day <= option.ends_on and contended > 0:
                others = demand.get(day, 0) - (request.instance_count if own_first <= day <= request.ends_on else 0)
                contended = min(contended, profile.min_free(day, day) - others)
                day += ONE_DAY
            contended = max(contended, 0)
        if room > 0 and (room > best or contended > best_contended or not found):
            found.append((option, room))
        best, best_contended = max(best, room), max(best_contended, contended)
    return found


def first_come_first_served(
    requests: list[RequestInput], pools: dict[int, PoolInput], *, today: date
) -> dict[int, Grant]:
    """The queue in order (the order of `requests`): each request as asked, or trimmed to what is free over its
    asked window after the ones before it. Forced (what-if) requests go first."""
    used = {pid: defaultdict(int, pool.used) for pid, pool in pools.items()}
    grants = {}
    for request in sorted(requests, key=lambda r: not r.forced):
        pool = pools[request.pool_id]
        first, last = max(request.starts_on, today), request.ends_on
        count = 0
        if first <= last <= pool.ends_on:
            days = [first + timedelta(days=i) for i in range((last - first).days + 1)]
            free = min(pool.allocatable_on(d) - used[pool.id][d] for d in days)
            count = max(min(request.instance_count, free), 0)
            for d in days:
                used[pool.id][d] += count
        grants[request.id] = Grant(request.id, count, first, last, 0) if count else Grant(request.id, 0)
    return grants


def _segments(pool: PoolInput, windows: list[Option]) -> list[tuple[date, date]]:
    """The pool's days between breakpoints: where its free capacity or any candidate window changes."""
    first = min(w.starts_on for w in windows)
    last = max(w.ends_on for w in windows)
    marks = {first, last + ONE_DAY}
    for w in windows:
        marks.update((w.starts_on, w.ends_on + ONE_DAY))
    for day in pool.used:
        if first <= day <= last:
            marks.update((day, day + ONE_DAY))
    for since, _k in pool.growth:
        if first < since <= last:
            marks.add(since)
    ordered = sorted(marks)
    return [(a, b - ONE_DAY) for a, b in zip(ordered, ordered[1:], strict=False)]


def solve(
    requests: list[RequestInput],
    pools: dict[int, PoolInput],
    *,
    today: date,
    fairness: str = "maxmin",
    weights: dict[int, int] | None = None,
    time_limit: float = 5.0,
    workers: int = 0,
) -> Solution:
    """The plan for `requests` (in queue order) over `pools`. `time_limit` (seconds) is shared by the solves."""
    started = time.perf_counter()
    weights = weights or {}
    fcfs = first_come_first_served(requests, pools, today=today)
    fcfs_total = sum(g.instance_days for g in fcfs.values())
    model = cp_model.CpModel()
    choices: dict[int, list[tuple[Option, cp_model.IntVar, cp_model.IntVar]]] = {}
    grant_days: dict[int, cp_model.LinearExpr] = {}
    notes: list[str] = []
    per_pool: dict[int, list[tuple[Option, cp_model.IntVar]]] = defaultdict(list)
    profiles: dict[int, Profile] = {}
    demand = asked_demand(requests, today=today)
    for request in requests:
        pool = pools[request.pool_id]
        if pool.id not in profiles:
            profiles[pool.id] = Profile(pool, first=max(pool.starts_on, today), last=pool.ends_on)
        vars_ = []
        windows = candidates(request, pool, profiles[pool.id], today=today, demand=demand[pool.id])
        for option, room in windows:
            count = model.new_int_var(0, room, f"n{request.id}_{option.shift}")
            chosen = model.new_bool_var(f"x{request.id}_{option.shift}")
            model.add(count <= room * chosen)
            model.add(count >= chosen)
            if request.forced:
                model.add(count == request.instance_count)
            vars_.append((option, count, chosen))
            per_pool[pool.id].append((option, count))
        if request.forced and not vars_:
            notes.append("forced-does-not-fit")
        if vars_:
            model.add_at_most_one(c for _o, _n, c in vars_)
        choices[request.id] = vars_
        grant_days[request.id] = sum(o.days * n for o, n, _c in vars_) if vars_ else 0

    # The ledger: on every segment, the grants holding it fit in the fewest instances free on any of its days.
    for pool_id, held in per_pool.items():
        pool = pools[pool_id]
        segments = _segments(pool, [o for o, _n in held])
        starts = [s for s, _e in segments]
        covering: dict[int, list] = defaultdict(list)
        for option, count in held:
            i = bisect_right(starts, option.starts_on) - 1
            while i < len(segments) and segments[i][0] <= option.ends_on:
                covering[i].append(count)
                i += 1
        for i, counts in covering.items():
            free = profiles[pool_id].min_free(*segments[i])
            model.add(sum(counts) <= free)

    total = sum(grant_days.values()) if grant_days else 0
    _hint(model, choices, fcfs)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = workers or 4
    deadline = started + time_limit

    def run(share: float = 1.0) -> int:
        solver.parameters.max_time_in_seconds = max((deadline - time.perf_counter()) * share, 0.05)
        return solver.solve(model)

    def best(status: int) -> dict[int, Grant] | None:
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return None
        return _grants(solver, choices)

    if not any(choices.values()):
        grants = {r.id: Grant(r.id, 0) for r in requests}
        return Solution(grants, "EMPTY", 0, 0, fcfs_total, None, time.perf_counter() - started, fairness, notes)

    forced = any(r.forced for r in requests)
    if not forced:
        model.add(total >= fcfs_total)  # goal 1: never less than the queue order grants
    min_share = None
    fallback = fcfs
    statuses = []
    if fairness == "maxmin":
        asked = defaultdict(int)
        counted = defaultdict(bool)
        for request in requests:
            asked[request.organization_id] += request.instance_count * ((request.ends_on - request.starts_on).days + 1)
            counted[request.organization_id] |= bool(choices[request.id])
        floor = model.new_int_var(0, SHARE_SCALE, "floor")
        targets = {}
        for org_id, asked_days in asked.items():
            if not counted[org_id] or not asked_days:
                continue
            granted = sum(grant_days[r.id] for r in requests if r.organization_id == org_id)
            weight = max(int(weights.get(org_id, 1)), 1)
            target = model.new_int_var(0, SHARE_SCALE, f"target{org_id}")
            model.add_min_equality(target, [floor * weight, SHARE_SCALE])
            model.add(SHARE_SCALE * granted >= asked_days * target)
            targets[org_id] = (target, weight, asked_days)
        # The hint's own floor, so the hint is complete: the solver starts from first-come-first-served.
        granted_by_org = defaultdict(int)
        for request in requests:
            granted_by_org[request.organization_id] += fcfs[request.id].instance_days
        level = min((SHARE_SCALE * granted_by_org[o] // (a * w) for o, (_t, w, a) in targets.items()), default=0)
        level = min(level, SHARE_SCALE)
        model.add_hint(floor, level)
        for _org_id, (target, weight, _a) in targets.items():
            model.add_hint(target, min(level * weight, SHARE_SCALE))
        model.maximize(floor)
        status = run(share=0.5)  # half the time for goal 2, what is left for goal 3
        statuses.append(status)
        found = best(status)
        if found is not None:
            fallback = found
            level = int(solver.value(floor))
            min_share = level / SHARE_SCALE
            model.add(floor >= level)
            _hint(model, choices, found)
            model.add_hint(floor, level)
            for _org_id, (target, weight, _a) in targets.items():
                model.add_hint(target, min(level * weight, SHARE_SCALE))
    # Goal 3, and among plans granting as much, the fewest days moved: objective = total × K − days moved, with
    # K above any sum of shifts, so a day moved never costs an instance-day.
    moved = [o.shift * c for vars_ in choices.values() for o, _n, c in vars_ if o.shift]
    scale = 1 + sum(max((o.shift for o, _n, _c in vars_), default=0) for vars_ in choices.values())
    model.maximize(total * scale - sum(moved) if moved else total)
    status = run()
    statuses.append(status)
    found = best(status)
    seconds = time.perf_counter() - started
    if found is None:
        granted = sum(g.instance_days for g in fallback.values())
        label = "FCFS" if fallback is fcfs else "FEASIBLE"
        return Solution(fallback, label, granted, max(granted, fcfs_total), fcfs_total, min_share, seconds,
                        fairness, notes)  # fmt: skip
    granted = sum(g.instance_days for g in found.values())
    bound = int(solver.best_objective_bound)
    if moved:
        bound = (bound + scale - 1) // scale  # total × K − moved ≤ bound, and moved < K
    optimal = all(s == cp_model.OPTIMAL for s in statuses)
    return Solution(found, "OPTIMAL" if optimal else "FEASIBLE", granted, bound, fcfs_total, min_share, seconds,
                    fairness, notes)  # fmt: skip


def _hint(model: cp_model.CpModel, choices: dict, grants: dict[int, Grant]) -> None:
    model.clear_hints()
    for request_id, vars_ in choices.items():
        grant = grants.get(request_id)
        for option, count, chosen in vars_:
            picked = grant is not None and grant.instance_count > 0 and grant.starts_on == option.starts_on
            model.add_hint(chosen, picked)
            model.add_hint(count, grant.instance_count if picked else 0)


def _grants(solver: cp_model.CpSolver, choices: dict) -> dict[int, Grant]:
    grants = {}
    for request_id, vars_ in choices.items():
        grants[request_id] = Grant(request_id, 0)
        for option, count, _chosen in vars_:
            n = int(solver.value(count))
            if n:
                grants[request_id] = Grant(request_id, n, option.starts_on, option.ends_on, option.shift)
    return grants
