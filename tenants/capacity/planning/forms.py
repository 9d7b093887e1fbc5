"""The planner's form: which pools, the fairness rule, a time limit, and what-if changes."""

from __future__ import annotations

from django import forms
from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from portal.forms import DateInput
from tenants.capacity.planning.reasons import FAIRNESS_LABELS
from tenants.capacity.planning.services import Growth, PlanAsk
from tenants.cycle import IN_CYCLE
from tenants.models import CapacityPool, CapacityRequest


class PlanForm(forms.Form):
    pool = forms.ChoiceField(label=gettext_lazy("Pools"), required=False)
    fairness = forms.ChoiceField(
        label=gettext_lazy("Fairness rule"),
        choices=list(FAIRNESS_LABELS.items()),
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

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        pools = CapacityPool.objects.select_related("instance_type").order_by("instance_type__api_name", "region")
        self.fields["pool"].choices = [("", _("Every pool with submitted requests"))] + [
            (str(p.pk), str(p)) for p in pools
        ]
        self.fields["grow_pool"].queryset = pools
        self.fields["approve_as_asked"].queryset = (
            CapacityRequest.objects.visible_to(user)
            .filter(status=CapacityRequest.Status.SUBMITTED)
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
