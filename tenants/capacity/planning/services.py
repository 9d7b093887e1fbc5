"""Plans for the pending queue: made from the pool ledger and the submitted requests (read only), stored with a
fingerprint of what they were made on, and applied one request at a time through the approval service, which
takes the pool lock and checks the invariant again. What-if plans (a pool grown, a request approved as asked)
answer a question and are never applied. Making and applying a plan are audited with no organization (a plan
spans them); the approvals it makes are audited by the approval service under theirs."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.translation import gettext as _

from portal.periods import today
from tenants.access import require_program_manager
from tenants.audit import record_audit
from tenants.capacity.decisions import approve_request
from tenants.capacity.ledger import allocated_by_day
from tenants.capacity.models import CapacityPlan
from tenants.capacity.planning.reasons import explain
from tenants.capacity.planning.solver import FAIRNESS_RULES, PoolInput, RequestInput, Solution, solve
from tenants.capacity.requests import locked_request
from tenants.models import CapacityPool, CapacityRequest

ONE_DAY = timedelta(days=1)
MAX_REQUESTS = 2_000  # one plan's queue; larger queues are planned per pool
Status = CapacityRequest.Status


@dataclass(frozen=True)
class Growth:
    pool: CapacityPool
    instances: int
    starts_on: date


@dataclass
class PlanAsk:
    """What a manager asks the planner (from the page's form or the API's body)."""

    pools: list[CapacityPool] = field(default_factory=list)  # empty: every pool with submitted requests
    requests: list[CapacityRequest] = field(default_factory=list)  # empty: every submitted one of the pools
    fairness: str = "maxmin"
    weights: dict[int, int] = field(default_factory=dict)  # organization id → weight (default 1)
    time_limit: float | None = None
    growth: list[Growth] = field(default_factory=list)  # what-if: pools grown from a day
    approve_as_asked: CapacityRequest | None = None  # what-if: this one approved as asked

    @property
    def what_if(self) -> dict:
        found = {}
        if self.growth:
            found["pool_growth"] = [
                {"pool": g.pool.pk, "instances": g.instances, "starts_on": g.starts_on.isoformat()} for g in self.growth
            ]
        if self.approve_as_asked is not None:
            found["approve_as_asked"] = self.approve_as_asked.pk
        return found


def fingerprint(capacity_request: CapacityRequest) -> str:
    """What a plan's decision on a request rests on: a change to any of these refuses applying it."""
    state = "|".join(
        str(v)
        for v in (
            capacity_request.status, capacity_request.pool_id, capacity_request.instance_count,
            capacity_request.starts_on, capacity_request.ends_on, capacity_request.start_slack_days,
        )
    )  # fmt: skip
    return hashlib.sha256(state.encode()).hexdigest()[:16]


def pool_state(pool: CapacityPool) -> list:
    return [pool.total_instances, pool.spare_instances, pool.starts_on.isoformat(), pool.ends_on.isoformat()]


def _queue(user, ask: PlanAsk) -> tuple[list[CapacityPool], list[CapacityRequest]]:
    """The pools and the submitted requests to plan, oldest submission first; refuses requests not pending."""
    submitted = (
        CapacityRequest.objects.visible_to(user)
        .select_related("organization", "pool__instance_type", "pool__program")
        .order_by("submitted_at", "pk")
    )
    if ask.requests:
        not_pending = [r.number for r in ask.requests if r.status != Status.SUBMITTED]
        if not_pending:
            raise ValidationError(
                {
                    "requests": _("Only submitted requests can be planned; not: %(ids)s.")
                    % {"ids": ", ".join(not_pending)}
                }
            )
        if ask.pools:
            outside = [r.number for r in ask.requests if r.pool_id not in {p.pk for p in ask.pools}]
            if outside:
                raise ValidationError(
                    {"requests": _("Not in the pools planned: %(ids)s.") % {"ids": ", ".join(outside)}}
                )
        queue = list(submitted.filter(pk__in=[r.pk for r in ask.requests]))
    else:
        queue = submitted.filter(status=Status.SUBMITTED)
        if ask.pools:
            queue = queue.filter(pool__in=ask.pools)
        queue = list(queue[: MAX_REQUESTS + 1])
    if len(queue) > MAX_REQUESTS:
        raise ValidationError(
            {"pools": _("More than %(n)s submitted requests: plan one pool at a time.") % {"n": MAX_REQUESTS}}
        )
    forced = ask.approve_as_asked
    if forced is not None and forced.pk not in {r.pk for r in queue}:
        raise ValidationError({"approve_as_asked": _("Choose a submitted request of the plan's queue.")})
    pools = {p.pk: p for p in ask.pools} | {r.pool_id: r.pool for r in queue}
    for growth in ask.growth:
        pools.setdefault(growth.pool.pk, growth.pool)
    return sorted(pools.values(), key=lambda p: p.pk), queue


def _inputs(pools, queue, ask: PlanAsk, *, on: date, forced_id: int | None):
    last = max((p.ends_on for p in pools), default=on)
    used = allocated_by_day([p.pk for p in pools], first=on, last=last)
    growth = defaultdict(list)
    for g in ask.growth:
        growth[g.pool.pk].append((g.starts_on, g.instances))
    pool_inputs = {
        p.pk: PoolInput(p.pk, p.allocatable_instances, p.starts_on, p.ends_on, used[p.pk], tuple(growth[p.pk]))
        for p in pools
    }
    requests = [
        RequestInput(
            r.pk, r.organization_id, r.pool_id, r.instance_count, r.starts_on, r.ends_on, r.start_slack_days,
            forced=r.pk == forced_id,
        )
        for r in queue
    ]  # fmt: skip
    return pool_inputs, requests


def make_plan(*, user, ask: PlanAsk) -> CapacityPlan:
    """Plan the queue and store the plan; read only for the ledger and the requests."""
    require_program_manager(user, _("Only a program manager can plan capacity."))
    if ask.fairness not in FAIRNESS_RULES:
        raise ValidationError({"fairness": _("Choose max-min or total.")})
    on = today()
    pools, queue = _queue(user, ask)
    limit = ask.time_limit or settings.CAPACITY_PLAN_TIME_LIMIT
    forced = ask.approve_as_asked
    pool_inputs, requests = _inputs(pools, queue, ask, on=on, forced_id=forced.pk if forced else None)
    solution = solve(
        requests, pool_inputs, today=on, fairness=ask.fairness, weights=ask.weights,
        time_limit=limit / 2 if forced else limit,
    )  # fmt: skip
    result = describe(solution, pools=pools, queue=queue, pool_inputs=pool_inputs, on=on)
    if forced is not None:
        # Against the same queue planned without forcing it: who loses what it would have had.
        _p, unforced = _inputs(pools, queue, PlanAsk(growth=ask.growth), on=on, forced_id=None)
        baseline = solve(
            unforced, pool_inputs, today=on, fairness=ask.fairness, weights=ask.weights, time_limit=limit / 2
        )
        result["forced_fits"] = "forced-does-not-fit" not in solution.notes
        result["displaced"] = [
            {"request": r.pk, "number": r.number, "organization": r.organization.name,
             "before": baseline.grants[r.pk].instance_count, "after": solution.grants[r.pk].instance_count}
            for r in queue
            if r.pk != forced.pk and solution.grants[r.pk].instance_days < baseline.grants[r.pk].instance_days
        ]  # fmt: skip
    # Only the writes share a transaction: the solver's seconds are spent outside it.
    with transaction.atomic():
        plan = CapacityPlan.objects.create(
            created_by=user,
            inputs={
                "pools": [p.pk for p in pools],
                "requests": [r.pk for r in queue],
                "fairness": ask.fairness,
                "weights": {str(k): v for k, v in ask.weights.items()},
                "time_limit": limit,
                "what_if": ask.what_if,
            },
            result=result,
            fingerprints={str(r.pk): fingerprint(r) for r in queue},
            pool_capacity={str(p.pk): pool_state(p) for p in pools},
        )
        # A plan spans organizations: its events belong to none, so only program staff see them, as the plan.
        record_audit(
            actor=user,
            organization=None,
            action="plan.created",
            target=plan,
            changes={
                "pools": (None, ", ".join(str(p) for p in pools)),
                "requests": (None, len(queue)),
                "fairness": (None, ask.fairness),
                "what_if": (None, plan.is_what_if),
            },
        )
    return plan


def _kind(request: CapacityRequest, grant, on: date) -> str:
    if not grant.instance_count:
        return "pending"
    trimmed = grant.instance_count < request.instance_count
    if grant.shift:
        return "shifted_trimmed" if trimmed else "shifted"
    return "trimmed" if trimmed else "as_asked"


def describe(solution: Solution, *, pools, queue, pool_inputs, on: date) -> dict:
    """The plan as people read it: per request what it gets and why; per organization and pool, the totals;
    per pool the free capacity before and after over the window. Stored as plain values (the page translates)."""
    planned = {p.pk: defaultdict(int) for p in pools}
    planned_by = {p.pk: defaultdict(lambda: defaultdict(int)) for p in pools}
    for r in queue:
        g = solution.grants[r.pk]
        day = g.starts_on
        while g.instance_count and day <= g.ends_on:
            planned[r.pool_id][day] += g.instance_count
            planned_by[r.pool_id][day][r.organization.name] += g.instance_count
            day += ONE_DAY
    names = {r.organization_id: r.organization.name for r in queue}
    asked_by_org, granted_by_org = defaultdict(int), defaultdict(int)
    rows = []
    for r in queue:
        g = solution.grants[r.pk]
        pool = pool_inputs[r.pool_id]
        asked_hours = r.instance_hours
        granted_hours = g.instance_days * 24
        asked_by_org[r.organization_id] += asked_hours
        granted_by_org[r.organization_id] += granted_hours
        kind = _kind(r, g, on)
        reason = None
        if kind != "as_asked":
            # The bottleneck: the day of the asked window with the least room left once the plan is in.
            first = max(r.starts_on, on)
            best = None
            day = first
            while day <= min(r.ends_on, pool.ends_on):
                mine = g.instance_count if g.instance_count and g.starts_on <= day <= g.ends_on else 0
                others = planned[r.pool_id][day] - mine
                room = pool.allocatable_on(day) - pool.used.get(day, 0) - others
                if best is None or room < best[0]:
                    best = (room, day, others)
                day += ONE_DAY
            if best is None:
                reason = {"code": "passed"}
            else:
                room, day, others = best
                by_org = planned_by[r.pool_id][day].copy()
                if g.instance_count and g.starts_on <= day <= g.ends_on:
                    by_org[r.organization.name] -= g.instance_count
                reason = {
                    "code": "full",
                    "day": day.isoformat(),
                    "allocatable": pool.allocatable_on(day),
                    "existing": pool.used.get(day, 0),
                    "planned": others,
                    "room": max(room, 0),
                    "planned_for": ", ".join(f"{n} {c}" for n, c in sorted(by_org.items()) if c > 0),
                }
        rows.append(
            {
                "request": r.pk, "number": r.number, "organization": r.organization.name,
                "organization_id": r.organization_id, "pool": r.pool_id, "pool_name": str(r.pool),
                "asked_instances": r.instance_count, "asked_starts_on": r.starts_on.isoformat(),
                "asked_ends_on": r.ends_on.isoformat(), "start_slack_days": r.start_slack_days,
                "decision": kind, "instances": g.instance_count,
                "starts_on": g.starts_on.isoformat() if g.instance_count else None,
                "ends_on": g.ends_on.isoformat() if g.instance_count else None, "shift_days": g.shift,
                "asked_hours": asked_hours, "granted_hours": granted_hours, "reason": reason,
            }
        )  # fmt: skip
    organizations = [
        {
            "organization_id": org_id, "organization": names[org_id], "asked_hours": asked_by_org[org_id],
            "granted_hours": granted_by_org[org_id],
            "share": round(granted_by_org[org_id] / asked_by_org[org_id], 3) if asked_by_org[org_id] else 0,
        }
        for org_id in sorted(names, key=lambda o: names[o])
    ]  # fmt: skip
    pool_rows = []
    for p in pools:
        pi = pool_inputs[p.pk]
        first, last = max(p.starts_on, on), p.ends_on
        days, day = [], first
        while day <= last:
            before = pi.allocatable_on(day) - pi.used.get(day, 0)
            days.append([day.isoformat(), before, before - planned[p.pk][day]])
            day += ONE_DAY
        pool_rows.append(
            {"pool": p.pk, "name": str(p), "allocatable": p.allocatable_instances,
             "granted_hours": sum(x["granted_hours"] for x in rows if x["pool"] == p.pk),
             "asked_hours": sum(x["asked_hours"] for x in rows if x["pool"] == p.pk),
             "free": days}
        )  # fmt: skip
    return {
        "status": solution.status,
        "gap": round(solution.gap, 4),
        "fairness": solution.fairness,
        "min_share": solution.min_share,
        "granted_hours": solution.granted * 24,
        "bound_hours": solution.bound * 24,
        "fcfs_hours": solution.fcfs * 24,
        "asked_hours": sum(x["asked_hours"] for x in rows),
        "seconds": round(solution.seconds, 3),
        "planned_on": on.isoformat(),
        "requests": rows,
        "organizations": organizations,
        "pools": pool_rows,
    }


@dataclass(frozen=True)
class Outcome:
    request_id: int
    number: str
    applied: bool
    message: str
    allocation: str = ""


def apply_plan(*, user, plan: CapacityPlan, request_ids: list[int] | None = None) -> list[Outcome]:
    """Approve the plan's grants (all, or the given requests), one request at a time, each in a transaction of its
    own through the approval service: a request changed or a pool resized since the plan is refused with the
    reason, and the others are applied. Each outcome is kept on the plan."""
    require_program_manager(user, _("Only a program manager can apply a capacity plan."))
    if plan.is_what_if:
        raise ValidationError(_("A what-if plan answers a question; it cannot be applied. Make a plan without it."))
    grants = {row["request"]: row for row in plan.result.get("requests", []) if row["instances"]}
    if request_ids is not None:
        unknown = [str(pk) for pk in request_ids if pk not in grants]
        if unknown:
            raise ValidationError({"requests": _("Not granted by this plan: %(ids)s.") % {"ids": ", ".join(unknown)}})
        chosen = [grants[pk] for pk in request_ids]
    else:
        chosen = list(grants.values())
    outcomes = []
    for row in chosen:
        outcome = _apply_one(user=user, plan=plan, row=row)
        outcomes.append(outcome)
        plan.outcomes[str(row["request"])] = {
            "applied": outcome.applied, "message": outcome.message, "allocation": outcome.allocation,
        }  # fmt: skip
    changes = {"approved": (None, ", ".join(o.number for o in outcomes if o.applied) or None)}
    if refused := [o.number for o in outcomes if not o.applied]:
        changes["refused"] = (None, ", ".join(refused))
    with transaction.atomic():
        plan.save(update_fields=["outcomes"])
        # The approval service audits each approval under its organization; this is the plan's own line.
        record_audit(
            actor=user,
            organization=None,
            action="plan.applied",
            target=plan,
            changes=changes,
        )
    return outcomes


def _apply_one(*, user, plan: CapacityPlan, row: dict) -> Outcome:
    number = row["number"]
    try:
        with transaction.atomic():
            # Lock order as in the approval service: pool, then request.
            pool = CapacityPool.objects.select_for_update().get(pk=row["pool"])
            if pool_state(pool) != plan.pool_capacity.get(str(pool.pk)):
                raise ValidationError(
                    _("The %(pool)s pool was resized since the plan was made: make a new plan.") % {"pool": pool}
                )
            capacity_request = locked_request(CapacityRequest(pk=row["request"]))
            if fingerprint(capacity_request) != plan.fingerprints.get(str(capacity_request.pk)):
                raise ValidationError(
                    _("%(id)s changed since the plan was made (now %(status)s): make a new plan.")
                    % {"id": number, "status": capacity_request.get_status_display().lower()}
                )
            allocation = approve_request(
                user=user,
                capacity_request=capacity_request,
                instance_count=row["instances"],
                starts_on=date.fromisoformat(row["starts_on"]),
                ends_on=date.fromisoformat(row["ends_on"]),
                comment=_("Granted by capacity plan %(plan)s.") % {"plan": plan.number} + " " + explain(row),
            )
    except CapacityRequest.DoesNotExist:
        return Outcome(row["request"], number, False, _("%(id)s no longer exists.") % {"id": number})
    except ValidationError as error:
        return Outcome(row["request"], number, False, " ".join(error.messages))
    return Outcome(row["request"], number, True, _("Approved."), allocation.number)
