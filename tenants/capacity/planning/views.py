"""The planner's pages in the review queue (program managers): ask for a plan (all pools or one, the fairness rule,
what-if changes), read it beside the queue — per request what it gets and why, per organization granted against
asked, per pool the free capacity before and after — and apply all of it or a selection."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_POST

from portal.forms import apply_errors
from portal.pages import paginate
from portal.periods import today
from tenants.access import require_program_manager
from tenants.capacity.charts import plan_chart
from tenants.capacity.models import CapacityPlan
from tenants.capacity.planning.forms import PlanForm
from tenants.capacity.planning.reasons import explain
from tenants.capacity.planning.services import apply_plan, make_plan

PAGE_SIZE = 10
DECISIONS = {
    "as_asked": gettext_lazy("As asked"),
    "trimmed": gettext_lazy("Trimmed"),
    "shifted": gettext_lazy("Moved later"),
    "shifted_trimmed": gettext_lazy("Moved and trimmed"),
    "pending": gettext_lazy("Left pending"),
}


@login_required
def capacity_plans(request):
    """Ask for a plan; the plans made lately."""
    require_program_manager(request.user, _("Only a program manager can plan capacity."))
    form = PlanForm(request.POST or None, user=request.user)
    if request.method == "POST" and form.is_valid():
        try:
            plan = make_plan(user=request.user, ask=form.ask())
        except ValidationError as error:
            apply_errors(form, error)
        else:
            return redirect("capacity-plan-page", pk=plan.pk)
    plans = paginate(request, CapacityPlan.objects.select_related("created_by"), PAGE_SIZE)
    status = 400 if form.errors else 200
    return render(request, "tenants/capacity_plans.html", {"form": form, "page": plans}, status=status)


@login_required
def capacity_plan(request, pk: int):
    """The plan beside the queue: per request its decision and why, per organization, per pool."""
    require_program_manager(request.user, _("Only a program manager can plan capacity."))
    plan = get_object_or_404(CapacityPlan.objects.select_related("created_by"), pk=pk)
    result = plan.result
    rows = [
        row | {"why": explain(row), "decision_label": DECISIONS.get(row["decision"], row["decision"]),
               "outcome": plan.outcomes.get(str(row["request"]))}
        for row in result.get("requests", [])
    ]  # fmt: skip
    charts = [{"pool": p, "chart": plan_chart(p, today=today())} for p in result.get("pools", [])]
    context = {
        "plan": plan,
        "result": result,
        "rows": rows,
        "charts": charts,
        "granted_rows": [r for r in rows if r["instances"] and not r["outcome"]],
    }
    return render(request, "tenants/capacity_plan.html", context)


@login_required
@require_POST
def capacity_plan_apply(request, pk: int):
    """Apply the selected requests of the plan (all of its grants when none is selected)."""
    require_program_manager(request.user, _("Only a program manager can apply a capacity plan."))
    plan = get_object_or_404(CapacityPlan, pk=pk)
    chosen = [int(v) for v in request.POST.getlist("requests") if v.isdigit()]
    try:
        outcomes = apply_plan(user=request.user, plan=plan, request_ids=chosen or None)
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
        return redirect("capacity-plan-page", pk=plan.pk)
    applied = [o for o in outcomes if o.applied]
    refused = [o for o in outcomes if not o.applied]
    if applied:
        messages.success(
            request,
            _("Approved: %(ids)s.") % {"ids": ", ".join(f"{o.number} ({o.allocation})" for o in applied)},
        )
    for outcome in refused:
        messages.error(request, f"{outcome.number}: {outcome.message}")
    return redirect("capacity-plan-page", pk=plan.pk)
