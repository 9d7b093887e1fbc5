"""Pool usage over time, by an interval sweep: O(n log n) in the number of allocations, never a loop
over every allocation for every day. Pure functions on plain values; the services and pages feed
them rows they fetched in one query.

Windows are whole days, both ends inclusive (an allocation from Jan 1 to Mar 31 holds its instances
on Mar 31 too).
"""

from collections import defaultdict
from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from datetime import date, timedelta

ONE_DAY = timedelta(days=1)


@dataclass(frozen=True)
class Span:
    starts_on: date
    ends_on: date
    count: int
    key: Hashable = None  # e.g. the organization, for stacked charts


@dataclass(frozen=True)
class Peak:
    used: int  # the most instances held on any day of the window
    on: date  # the first day that peak is reached: where the bottleneck is


def _deltas(spans: Iterable[Span], starts_on: date, ends_on: date) -> dict[date, int]:
    deltas: dict[date, int] = defaultdict(int)
    for span in spans:
        if span.ends_on < starts_on or span.starts_on > ends_on:
            continue
        deltas[max(span.starts_on, starts_on)] += span.count
        deltas[min(span.ends_on, ends_on) + ONE_DAY] -= span.count
    return deltas


def peak_usage(spans: Iterable[Span], *, starts_on: date, ends_on: date) -> Peak:
    """The highest number of instances held on any day in [starts_on, ends_on]."""
    peak = Peak(used=0, on=starts_on)
    running = 0
    for day, delta in sorted(_deltas(spans, starts_on, ends_on).items()):
        running += delta
        if running > peak.used and day <= ends_on:
            peak = Peak(used=running, on=day)
    return peak


@dataclass(frozen=True)
class Step:
    """From `starts_on` to `ends_on` (inclusive) the usage per key is constant."""

    starts_on: date
    ends_on: date
    by_key: dict


def usage_steps(spans: Iterable[Span], *, starts_on: date, ends_on: date) -> list[Step]:
    """Usage per key as a step function over the window: one Step per interval where nothing changes."""
    deltas: dict[date, dict] = defaultdict(lambda: defaultdict(int))
    for span in spans:
        if span.ends_on < starts_on or span.starts_on > ends_on:
            continue
        deltas[max(span.starts_on, starts_on)][span.key] += span.count
        deltas[min(span.ends_on, ends_on) + ONE_DAY][span.key] -= span.count
    boundaries = sorted({starts_on, ends_on + ONE_DAY, *deltas})
    running: dict = defaultdict(int)
    steps = []
    for day, next_day in zip(boundaries, boundaries[1:], strict=False):
        for key, delta in deltas.get(day, {}).items():
            running[key] += delta
            if running[key] == 0:
                del running[key]
        steps.append(Step(starts_on=day, ends_on=next_day - ONE_DAY, by_key=dict(running)))
    return steps
