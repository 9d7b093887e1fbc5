"""What a budget alert says, in the active language: the pages, the mail's subject and body. It reads the alert's
own fields only, so the model can say it too (BudgetAlert.text) without importing the alerts' machinery."""

from __future__ import annotations

from django.utils.translation import gettext as _

from workloads.usage.formats import local_text


def alert_text(alert) -> str:
    """What the alert says, in the active language: the landing page, the mail's subject."""
    program = alert.budget.program
    whose = alert.organization.name if alert.organization else program.name
    values = {
        "whose": whose,
        "percent": alert.percent,
        "spent": local_text(alert.spent_micro_usd, program),
        "budget": local_text(alert.budget_micro_usd, program),
        "forecast": local_text(alert.forecast_micro_usd, program),
    }
    if alert.kind == "forecast":
        return (
            _("%(whose)s: the forecast to the end of the cycle, %(forecast)s, passes the budget of %(budget)s") % values
        )
    return _("%(whose)s has spent %(percent)s%% of its budget: %(spent)s of %(budget)s") % values
