"""Usage forms: a rate-card entry."""

from __future__ import annotations

from decimal import Decimal

from django import forms
from django.utils.translation import gettext_lazy as _

from portal.forms import DateInput
from tenants.cycle import IN_CYCLE
from tenants.models import InstanceType, Region
from workloads.usage.models import RateCardEntry
from workloads.usage.rates import MAX_USD_PER_HOUR


class RateCardForm(forms.Form):
    instance_type = forms.ModelChoiceField(
        label=_("Instance type"), queryset=InstanceType.objects.order_by("api_name"), to_field_name="api_name"
    )
    region = forms.ChoiceField(label=_("Region"), choices=Region.choices)
    kind = forms.ChoiceField(label=_("Kind"), choices=RateCardEntry.Kind.choices)
    usd_per_hour = forms.DecimalField(
        label=_("USD per instance-hour"),
        min_value=Decimal("0.0001"),
        max_value=MAX_USD_PER_HOUR,  # and the type's own ceiling, checked by rates.add_rate
        max_digits=10,
        decimal_places=4,
    )
    effective_from = forms.DateField(label=_("Effective from"), widget=DateInput, validators=[IN_CYCLE])
    note = forms.CharField(label=_("Note"), max_length=300, required=False, help_text=_("Where the rate comes from."))
