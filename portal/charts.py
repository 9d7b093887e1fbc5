"""Chart geometry shared by every server-rendered SVG chart (the pool timeline now; the usage dashboards next).

Charts are inline SVG drawn by templates from plain numbers computed here: no JavaScript, they swap cleanly
with htmx and tests read them with the test client. A chart has a frame (its size and margins), scales that
map days and values to pixels, round value ticks, month ticks, and a palette in a fixed order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import date, timedelta

from django.utils.formats import date_format

PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"]


@dataclass(frozen=True)
class Frame:
    width: int = 960
    height: int = 320
    left: int = 56
    right: int = 16
    top: int = 16
    bottom: int = 44

    @property
    def plot_w(self) -> int:
        return self.width - self.left - self.right

    @property
    def plot_h(self) -> int:
        return self.height - self.top - self.bottom

    def as_dict(self) -> dict:
        """What every chart template reads: the frame, the plot area and where its labels go."""
        base = self.top + self.plot_h
        return {
            "width": self.width,
            "height": self.height,
            "left": self.left,
            "right": self.right,
            "top": self.top,
            "bottom": self.bottom,
            "plot_w": self.plot_w,
            "plot_h": self.plot_h,
            "x0": self.left,
            "x1": self.left + self.plot_w,
            "y_base": base,
            "y_mid": round(self.top + self.plot_h / 2),
            "y_tick": base + 4,
            "y_label": base + 18,
            "y_caption": self.height - 4,
            "x_label": self.left - 6,
        }


@dataclass(frozen=True)
class DayScale:
    """Days [starts_on, ends_on] (inclusive) across the plot's width: a day is a band, x(day) its left edge."""

    frame: Frame
    starts_on: date
    ends_on: date

    @property
    def days(self) -> int:
        return (self.ends_on - self.starts_on).days + 1

    def x(self, day: date) -> float:
        return round(self.frame.left + self.frame.plot_w * (day - self.starts_on).days / self.days, 2)

    def contains(self, day: date) -> bool:
        return self.starts_on <= day <= self.ends_on

    def months(self, *, min_room: int = 30) -> list[dict]:
        """A tick at each month start inside the window, labelled 2027-03; none so close to the right edge
        that its label would be cut."""
        ticks, day = [], self.starts_on.replace(day=1)
        while day <= self.ends_on:
            if day >= self.starts_on and self.x(day) < self.frame.left + self.frame.plot_w - min_room:
                ticks.append({"x": self.x(day), "label": date_format(day, "Y-m")})
            day = (day + timedelta(days=32)).replace(day=1)
        return ticks


LABEL_ROOM_PX = 14  # a tick label's height (11 px font) and a little air


def nice_step(rough: float) -> float:
    """The round step nearest `rough`: 1, 2 or 5 times a power of ten (110 becomes 100, 0.37 becomes 0.5), so
    ticks read 0, 100, 200 rather than 0, 110, 220."""
    if rough <= 0:
        return 1
    power = 10 ** math.floor(math.log10(rough))
    fraction = rough / power
    factor = 1 if fraction < 1.5 else 2 if fraction < 3 else 5 if fraction < 7 else 10
    return factor * power


def nice_ceiling(value: float, *, count: int = 5) -> float:
    """`value` rounded up to the next round tick, so a data-driven axis ends on a labelled tick (440 → 500)."""
    if value <= 0:
        return 1
    step = nice_step(value / count)
    return math.ceil(value / step - 1e-9) * step


def tick_label(value: float) -> str:
    """A tick's text: whole numbers without decimals, thousands grouped (1,000), fractions as few digits as needed."""
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.2f}".rstrip("0").rstrip(".")


@dataclass(frozen=True)
class ValueScale:
    """Values [0, maximum] up the plot's height."""

    frame: Frame
    maximum: float

    def y(self, value: float) -> float:
        return round(self.frame.top + self.frame.plot_h * (1 - value / self.maximum), 2)

    def ticks(self, *, marks: tuple[float, ...] = (), count: int = 6) -> list[dict]:
        """Round ticks (1, 2 or 5 × a power of ten apart, about `count` of them) plus the `marks` (e.g. a capacity
        line), no two labels closer than a label's height: a mark gives way to an earlier mark (allocatable 62 and
        a total of 64 would print one over the other), a round tick to any mark."""
        step = nice_step(self.maximum / count)
        room = self.maximum * LABEL_ROOM_PX / self.frame.plot_h  # a label's height, in values, on this plot
        rounds = [n * step for n in range(int(self.maximum / step + 1e-9) + 1)]
        kept: list[float] = []
        for value in [*marks, *rounds]:
            if value <= self.maximum and all(abs(value - other) > room for other in kept):
                kept.append(value)
        return [{"y": self.y(v), "label": tick_label(v), "value": v} for v in sorted(kept)]
