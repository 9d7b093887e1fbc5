"""The planner's pages in the review queue (program managers): ask for a plan (all pools or one, the fairness rule,
what-if changes), read it beside the queue — per request what it gets and why, per organization granted against
asked, per pool the free capacity before and after — and apply all of it or a selection."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_POST

from portal.forms import DateInput, apply_errors
from portal.pages import paginate
from portal.periods import today
from tenants.access import require_program_manager
from tenants.capacity.charts import plan_chart
from tenants.capacity.models import CapacityPlan
from tenants.capacity.planning.reasons import explain
from tenants.capacity.planning.services import Growth, PlanAsk, apply_plan, make_plan
from tenants.cycle import IN_CYCLE
from tenants.models import CapacityPool, CapacityRequest

PAGE_SIZE = 10
DECISIONS = {
    "as_asked": gettext_lazy("As asked"),
    "trimmed": gettext_lazy("Trimmed"),
    "shifted": gettext_lazy("Moved later"),
    "shifted_trimmed": gettext_lazy("Moved and trimmed"),
    "pending": gettext_lazy("Left pending"),
}


class PlanForm(forms.Form):
    pool = forms.ChoiceField(label=gettext_lazy("Pools"), required=False)
    fairness = forms.ChoiceField(
        label=gettext_lazy("Fairness rule"),
        choices=[
            ("maxmin", gettext_lazy("Max-min share per organization, then the most instance-hours")),
            ("total", gettext_lazy("The most instance-hours only")),
        ],
        initial="maxmin",
    )
    time_limit = forms.FloatField(
        label=gettext_lazy("Time limit (seconds)"), min_value=0.5, max_value=30, required=False
    )
    grow_pool = forms.ModelChoiceField(
        label=gettext_lazy("What if this pool grew"), queryset=CapacityPool.objects.none(), required=False
    )
    grow_instances = forms.IntegerField(
        label=gettext_lazy("by (instances)"), min_value=1, max_value=100_000, required=False
    )
    grow_from = forms.DateField(label=gettext_lazy("from"), widget=DateInput, validators=[IN_CYCLE], required=False)
    approve_as_asked = forms.ModelChoiceField(
        label=gettext_lazy("What if this request were approved as asked"),
        queryset=CapacityRequest.objects.none(),
        required=False,
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        pools = CapacityPool.objects.select_related("instance_type").order_by("instance_type__api_name", "region")
        self.fields["pool"].choices = [("", _("Every pool with submitted requests"))] + [
            (str(p.pk), str(p)) for p in pools
        ]
        self.fields["grow_pool"].queryset = pools
        self.fields["approve_as_asked"].queryset = (
            CapacityRequest.objects.filter(status=CapacityRequest.Status.SUBMITTED)
            .select_related("organization")
            .order_by("submitted_at", "pk")
        )
        self.fields["approve_as_asked"].label_from_instance = lambda r: f"{r.number} {r.organization.name}"

    def clean(self):
        data = super().clean()
        growth = [data.get("grow_pool"), data.get("grow_instances"), data.get("grow_from")]
        if any(v is not None for v in growth) and not all(v is not None for v in growth):
            raise ValidationError({"grow_pool": _("Give the pool, the instances and the first day, or none.")})
        return data

    def ask(self) -> PlanAsk:
        data = self.cleaned_data
        pools = (
            [CapacityPool.objects.select_related("instance_type", "program").get(pk=data["pool"])]
            if data.get("pool")
            else []
        )
        growth = []
        if data.get("grow_pool"):
            growth = [Growth(data["grow_pool"], data["grow_instances"], data["grow_from"])]
        return PlanAsk(
            pools=pools,
            fairness=data["fairness"],
            time_limit=data.get("time_limit"),
            growth=growth,
            approve_as_asked=data.get("approve_as_asked"),
        )


@login_required
def capacity_plans(request):
    """Ask for a plan; the plans made lately."""
    require_program_manager(request.user, _("Only a program manager can plan capacity."))
    form = PlanForm(request.POST or None)
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
