"""Capacity forms: the request form (sizes typed in billions), a manager's decision, a revocation. Forms parse what
people type; tenants.capacity's services decide what is allowed."""

from decimal import Decimal

from django import forms
from django.utils.translation import gettext_lazy as _

from portal.forms import DateInput
from portal.periods import today
from tenants.capacity.estimate import MAX_INSTANCES, MAX_PARAMETERS, MAX_TOKENS
from tenants.cycle import IN_CYCLE
from tenants.models import FREE_TEXT_MAX, Allocation, CapacityPool, CapacityRequest, Framework, InstanceType

BILLION = Decimal(10**9)


def in_billions(count: int | None) -> str | None:
    """A count as a form shows it in billions: 70 and 15000, never 7E+1 or 1.5E+4."""
    return None if count is None else format((Decimal(count) / BILLION).normalize(), "f")


POOL_SEPARATOR = "/"


def pool_value(instance_type, region: str) -> str:
    """A pool choice's value: the instance type's API name and the region ("p5.48xlarge/us-east-1")."""
    return f"{getattr(instance_type, 'api_name', instance_type)}{POOL_SEPARATOR}{region}"


def pool_choices() -> list[tuple[str, str]]:
    """The instance types and regions the program has a pool of that is open today or later: only these can be
    asked for (Trn1 in Tokyo is not offered because no pool holds it)."""
    kind = ("instance_type__api_name", "instance_type__accelerator", "instance_type__accelerators_per_instance")
    pools = (
        CapacityPool.objects.filter(ends_on__gte=today())
        .values_list(*kind, "region")
        .order_by("instance_type__api_name", "region")
        .distinct()
    )
    # What tells the pools apart first, short enough to read whole in the menu in both languages (the region's
    # long name, "アジアパシフィック（東京）", cut the accelerator off): the region by its code, as AWS names it.
    return [
        (pool_value(api_name, region), f"{api_name} · {region} · {per} × {accelerator}")
        for api_name, accelerator, per, region in pools
    ]


class CapacityRequestForm(forms.Form):
    """What a tenant asks for. Sizes are entered in billions, as people talk about them."""

    pool = forms.ChoiceField(
        label=_("Pool"),
        help_text=_("An instance type in a region the program has a pool of."),
        error_messages={"invalid_choice": _("The program has no pool of %(value)s: choose one of its pools.")},
    )
    instance_count = forms.IntegerField(label=_("Instances"), min_value=1, max_value=MAX_INSTANCES, initial=8)
    starts_on = forms.DateField(label=_("First day"), widget=DateInput, validators=[IN_CYCLE])
    ends_on = forms.DateField(label=_("Last day"), widget=DateInput, validators=[IN_CYCLE])
    start_slack_days = forms.IntegerField(
        label=_("Start slack (days)"),
        min_value=0,
        max_value=366,
        initial=0,
        required=False,
        help_text=_("How many days later the whole window may start if the pool is full on the days asked."),
    )
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
        if "pool" in self.fields:
            self.fields["pool"].choices = pool_choices()

    def clean_pool(self) -> str:
        """The chosen pool's instance type and region, as the request is planned with them."""
        value = self.cleaned_data["pool"]
        api_name, _sep, region = value.partition(POOL_SEPARATOR)
        self.cleaned_data["instance_type"] = InstanceType.objects.get(api_name=api_name)
        self.cleaned_data["region"] = region
        return value

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
        del self.fields["pool"]
        self.fields["instance_count"].help_text = _(
            "Extension: instances from the day after the allocation ends. Enlargement: additional instances "
            "inside its window."
        )


class DecisionForm(forms.Form):
    decision = forms.ChoiceField(choices=[("approve", _("Approve")), ("reject", _("Reject"))])
    instance_count = forms.IntegerField(label=_("Instances"), min_value=1, required=False)
    starts_on = forms.DateField(label=_("First day"), required=False, widget=DateInput, validators=[IN_CYCLE])
    ends_on = forms.DateField(label=_("Last day"), required=False, widget=DateInput, validators=[IN_CYCLE])
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
