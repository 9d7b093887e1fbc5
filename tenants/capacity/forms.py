"""Capacity forms: the request form (sizes typed in billions), a manager's decision, a revocation. Forms parse what
people type; tenants.capacity's services decide what is allowed."""

from decimal import Decimal

from django import forms
from django.utils.functional import lazy
from django.utils.translation import gettext_lazy as _

from portal.forms import DateInput
from tenants.capacity.estimate import MAX_INSTANCES, MAX_PARAMETERS, MAX_TOKENS
from tenants.models import FREE_TEXT_MAX, Allocation, CapacityPool, CapacityRequest, Framework, InstanceType, Region

BILLION = Decimal(10**9)


def in_billions(count: int | None) -> str | None:
    """A count as a form shows it in billions: 70 and 15000, never 7E+1 or 1.5E+4."""
    return None if count is None else format((Decimal(count) / BILLION).normalize(), "f")


def _pools_offered() -> str:
    pools = CapacityPool.objects.order_by("instance_type__api_name", "region")
    offered = ", ".join(f"{t} ({r})" for t, r in pools.values_list("instance_type__api_name", "region").distinct())
    return _("The program's pools: %(pools)s.") % {"pools": offered or "—"}


class CapacityRequestForm(forms.Form):
    """What a tenant asks for. Sizes are entered in billions, as people talk about them."""

    instance_type = forms.ModelChoiceField(
        label=_("Instance type"),
        queryset=InstanceType.objects.filter(pools__isnull=False).distinct().order_by("api_name"),
        to_field_name="api_name",
        empty_label=None,
    )
    region = forms.ChoiceField(label=_("Region"), choices=Region.choices)
    instance_count = forms.IntegerField(label=_("Instances"), min_value=1, max_value=MAX_INSTANCES, initial=8)
    starts_on = forms.DateField(label=_("First day"), widget=DateInput)
    ends_on = forms.DateField(label=_("Last day"), widget=DateInput)
    justification = forms.CharField(
        label=_("Justification"),
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text=_("What the capacity is for: the model, the milestone, why this size and window."),
    )
    parameters_b = forms.DecimalField(
        label=_("Parameters (billions)"),
        required=False,
        min_value=Decimal("0.001"),
        max_value=MAX_PARAMETERS // 10**9,
        decimal_places=3,
        max_digits=9,
    )
    tokens_b = forms.DecimalField(
        label=_("Training tokens (billions)"),
        required=False,
        min_value=Decimal("0.001"),
        max_value=MAX_TOKENS // 10**9,
        decimal_places=3,
        max_digits=12,
        help_text=_("Leave blank for a compute-optimal 20 tokens per parameter."),
    )
    framework = forms.ChoiceField(label=_("Framework"), choices=[("", "—"), *Framework.choices], required=False)
    expected_mfu = forms.DecimalField(
        label=_("Expected model FLOPs utilization"),
        required=False,
        min_value=Decimal("0.01"),
        max_value=Decimal("1"),
        decimal_places=3,
        max_digits=4,
        help_text=_("A fraction: 0.40 is typical for large dense models on H100."),
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["region"].help_text = lazy(_pools_offered, str)()  # read only if the field is shown

    def clean(self):
        data = super().clean()
        if data.get("starts_on") and data.get("ends_on") and data["ends_on"] < data["starts_on"]:
            self.add_error("ends_on", _("The last day must not be before the first day."))
        return data

    @property
    def parameter_count(self) -> int | None:
        value = self.cleaned_data.get("parameters_b")
        return int(value * BILLION) if value else None

    @property
    def training_tokens(self) -> int | None:
        value = self.cleaned_data.get("tokens_b")
        return int(value * BILLION) if value else None


class ChangeRequestForm(CapacityRequestForm):
    """Extend or enlarge an allocation: type and region come from the allocation."""

    kind = forms.ChoiceField(
        label=_("Change"),
        choices=[(k, label) for k, label in CapacityRequest.Kind.choices if k != CapacityRequest.Kind.NEW],
    )

    def __init__(self, *args, allocation: Allocation, **kwargs):
        super().__init__(*args, **kwargs)
        self.allocation = allocation
        del self.fields["instance_type"], self.fields["region"]
        self.fields["instance_count"].help_text = _(
            "Extension: instances from the day after the allocation ends. Enlargement: additional instances "
            "inside its window."
        )


class DecisionForm(forms.Form):
    decision = forms.ChoiceField(choices=[("approve", _("Approve")), ("reject", _("Reject"))])
    instance_count = forms.IntegerField(label=_("Instances"), min_value=1, required=False)
    starts_on = forms.DateField(label=_("First day"), required=False, widget=DateInput)
    ends_on = forms.DateField(label=_("Last day"), required=False, widget=DateInput)
    comment = forms.CharField(
        label=_("Comment to the tenant"), required=False, widget=forms.Textarea(attrs={"rows": 2})
    )


class RevokeForm(forms.Form):
    reason = forms.CharField(
        label=_("Reason (the organization reads it)"),
        max_length=FREE_TEXT_MAX,
        widget=forms.Textarea(attrs={"rows": 3}),
        error_messages={"required": _("Give the reason for revoking; the tenant will read it.")},
    )
