"""The planner in words: why a plan decided what it did on a request, in words a manager can send the organization
(the bottleneck day of the asked window and who holds that day's instances; the page shows it beside each request,
and an approval made from the plan carries it as its comment), and what its fairness rules and audit details are
called."""

from __future__ import annotations

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

# The fairness rules as the form offers them (solver.FAIRNESS_RULES).
FAIRNESS_LABELS = {
    "maxmin": gettext_lazy("Max-min share per organization, then the most instance-hours"),
    "total": gettext_lazy("The most instance-hours only"),
}
# What the audit trail calls the details of a plan's lines (tenants.audit_labels.DETAILS): label, values in words.
AUDIT_DETAILS = {
    "pools": (gettext_lazy("Pools"), None),
    "requests": (gettext_lazy("Requests planned"), None),
    "fairness": (gettext_lazy("Fairness rule"), FAIRNESS_LABELS),
    "what_if": (gettext_lazy("What-if"), None),
    "approved": (gettext_lazy("Approved"), None),
    "refused": (gettext_lazy("Not applied"), None),
}


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
