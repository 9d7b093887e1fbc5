"""Where each milestone stands, defined once: pages, API, CSV and the task that marks measured milestones met.

- **Measured** (a workload and a number of tokens): its tokens are the workload's tokens trained
  (workloads.training.figures: the sum of its runs'); met when they reach the milestone's, at the moment of the
  workload's latest progress point; otherwise at risk when the last 7 days' rate reaches them only after the due
  date ends (or never), on track when before.
- **Reported**: the organization said it is done, with evidence; program staff confirm it (met) or return it.
- **Overdue**: past its due date and not met.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils import timezone
from django.utils.translation import pgettext_lazy

from portal.periods import day_start
from workloads.outcomes.models import Milestone
from workloads.training.figures import Finish, finish, recent_rates
from workloads.training.models import TrainingRun

STATES = {
    "met": pgettext_lazy("milestone state", "Met"),
    "reported": pgettext_lazy("milestone state", "Reported, to confirm"),
    "overdue": pgettext_lazy("milestone state", "Overdue"),
    "at_risk": pgettext_lazy("milestone state", "At risk"),
    "on_track": pgettext_lazy("milestone state", "On track"),
    "open": pgettext_lazy("milestone state", "Open"),
    "dropped": pgettext_lazy("milestone state", "Dropped"),
}
# Worst first, for lists that put what needs attention on top.
ORDER = ["overdue", "at_risk", "reported", "open", "on_track", "met", "dropped"]
BADGES = {"met": "approved", "reported": "submitted", "overdue": "rejected", "at_risk": "s2", "on_track": "active",
          "open": "open", "dropped": "dropped"}  # fmt: skip


@dataclass
class MilestoneState:
    milestone: Milestone
    state: str
    tokens: int | None = None  # measured: the workload's tokens trained
    finish: Finish | None = None  # measured and not met: when the recent rate reaches the tokens

    @property
    def label(self) -> str:
        return str(STATES[self.state])

    @property
    def badge(self) -> str:
        return BADGES[self.state]

    @property
    def fraction(self) -> float | None:
        target = self.milestone.target_tokens
        return None if self.tokens is None or not target else self.tokens / target

    @property
    def needs_attention(self) -> bool:
        return self.state in ("overdue", "at_risk", "reported")


def workload_tokens(workload_ids, *, now: datetime) -> tuple[dict[int, int], dict[int, float], dict[int, datetime]]:
    """Per workload: tokens trained (the sum of its runs'), the runs' recent rates summed (tokens a second), and its
    latest progress point. Two queries whatever the number of runs."""
    runs = list(
        TrainingRun.objects.filter(workload_id__in=set(workload_ids)).select_related(
            "instance_type", "workload__allocation__pool__instance_type"
        )
    )
    rates = recent_rates(runs, now=now)
    tokens, rate, latest = defaultdict(int), defaultdict(float), {}
    for run in runs:
        tokens[run.workload_id] += run.tokens
        rate[run.workload_id] += rates.get(run.pk) or 0
        if run.last_point_at and (run.workload_id not in latest or run.last_point_at > latest[run.workload_id]):
            latest[run.workload_id] = run.last_point_at
    return tokens, rate, latest


def milestone_states(milestones, *, now: datetime | None = None) -> list[MilestoneState]:
    """Each milestone's state, in the order given. Three queries at most (the milestones, their runs, the rates)."""
    now = now or timezone.now()
    milestones = list(milestones)
    tokens, rate, _latest = workload_tokens([m.workload_id for m in milestones if m.workload_id], now=now)
    today = timezone.localdate(now)
    states = []
    for milestone in milestones:
        states.append(_state(milestone, tokens=tokens, rate=rate, today=today, now=now))
    return states


def _state(milestone: Milestone, *, tokens, rate, today, now) -> MilestoneState:
    status = milestone.status
    # Read as of a moment before it was met (a month's report made later): not met yet then.
    met_later = status == Milestone.Status.MET and milestone.met_at is not None and milestone.met_at > now
    if met_later:
        status = Milestone.Status.OPEN
    trained = tokens.get(milestone.workload_id, 0) if milestone.measured else None
    if status == Milestone.Status.DROPPED:
        return MilestoneState(milestone, "dropped", trained)
    reached = trained is not None and trained >= milestone.target_tokens and not met_later
    if status == Milestone.Status.MET or reached:
        return MilestoneState(milestone, "met", trained)
    if status == Milestone.Status.REPORTED:
        return MilestoneState(milestone, "reported", trained)
    ahead = None
    if milestone.measured:
        ahead = finish(
            remaining=milestone.target_tokens - trained,
            rate=rate.get(milestone.workload_id) or None,
            now=now,
            ends=day_start(milestone.due_on + timedelta(days=1)),
            instances=None,
        )
    if milestone.due_on < today:
        return MilestoneState(milestone, "overdue", trained, ahead)
    if ahead is not None:
        return MilestoneState(milestone, "at_risk" if ahead.at_risk else "on_track", trained, ahead)
    return MilestoneState(milestone, "open", trained)


def attention_first(states: list[MilestoneState]) -> list[MilestoneState]:
    return sorted(states, key=lambda s: (ORDER.index(s.state), s.milestone.due_on, s.milestone.pk))
