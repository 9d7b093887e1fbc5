"""Why a plan decided what it did on a request, in words a manager can send the organization: the bottleneck day of
the asked window and who holds that day's instances. The page shows it beside each request, and an approval made
from the plan carries it as its comment."""

from __future__ import annotations

from django.utils.translation import gettext as _
from django.utils.translation import ngettext


def _full(reason: dict) -> str:
    text = _(
        "On %(day)s the pool's %(allocatable)s allocatable instances hold %(existing)s already allocated and "
        "%(planned)s granted by this plan to other requests, leaving %(room)s."
    ) % {
        "day": reason["day"],
        "allocatable": reason["allocatable"],
        "existing": reason["existing"],
        "planned": reason["planned"],
        "room": reason["room"],
    }
    if reason.get("planned_for"):
        text += " " + _("That day this plan grants: %(who)s.") % {"who": reason["planned_for"]}
    return text


def explain(row: dict) -> str:
    """One request's line of the plan, as a sentence."""
    decision, reason = row["decision"], row.get("reason") or {}
    if decision == "as_asked":
        return _("Fits as asked.")
    why = _full(reason) if reason.get("code") == "full" else _("The asked window has passed.")
    if decision == "pending":
        return _("Left pending: no room for one more instance in any window it allows.") + " " + why
    moved = ""
    if decision in ("shifted", "shifted_trimmed"):
        moved = ngettext(
            "Moved %(n)s day later, to %(start)s – %(end)s (within its slack).",
            "Moved %(n)s days later, to %(start)s – %(end)s (within its slack).",
            row["shift_days"],
        ) % {"n": row["shift_days"], "start": row["starts_on"], "end": row["ends_on"]}
    if decision == "shifted":
        return moved + " " + why
    trimmed = _("Trimmed to %(n)s of the %(asked)s instances asked.") % {
        "n": row["instances"],
        "asked": row["asked_instances"],
    }
    return " ".join(part for part in (moved, trimmed, why) if part)
