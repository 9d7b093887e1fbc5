"""Forms of the health pages: an NCCL baseline (program managers), the incident list's organization picker."""

from __future__ import annotations

from decimal import Decimal

from django import forms
from django.utils.translation import gettext_lazy as _

from tenants.models import InstanceType, Organization

GIB = 2**30


class BaselineForm(forms.Form):
    instance_type = forms.ModelChoiceField(label=_("Instance type"), queryset=InstanceType.objects.none())
    collective = forms.RegexField(
        label=_("Collective"),
        regex=r"^[a-z][a-z0-9_]{0,39}$",
        required=False,  # left empty: all_reduce, what nearly every baseline is
        initial="all_reduce",
        help_text=_("The nccl-tests binary without _perf: all_reduce, alltoall, all_gather, ..."),
    )
    nodes = forms.IntegerField(label=_("Nodes"), min_value=1, max_value=10_000, initial=2)
    busbw_gbps = forms.FloatField(
        label=_("Peak bus bandwidth (GB/s)"),
        min_value=0.01,
        max_value=100_000,
        help_text=_("busbw of that collective."),
    )
    size_gib = forms.DecimalField(
        label=_("At message size (GiB)"), min_value=Decimal("0.000001"), max_value=1024, initial=16, decimal_places=6
    )
    min_fraction = forms.DecimalField(
        label=_("Suspect below (fraction)"),
        min_value=Decimal("0.01"),
        max_value=1,
        decimal_places=2,
        initial=Decimal("0.90"),
        help_text=_("0.90: a run under nine tenths of the baseline marks the cluster suspect."),
    )
    source = forms.CharField(label=_("Source"), max_length=300, required=False)

    def __init__(self, *args, instance_types, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["instance_type"].queryset = instance_types

    def clean(self):
        data = super().clean()
        if not data.get("collective"):
            data["collective"] = "all_reduce"
        if "size_gib" in data:
            data["size_bytes"] = int(data.pop("size_gib") * GIB)
        return data


class IncidentFilterForm(forms.Form):
    organization = forms.ModelChoiceField(
        label=_("Organization"), queryset=Organization.objects.none(), required=False, to_field_name="slug",
        empty_label=_("All"),
    )  # fmt: skip

    def __init__(self, *args, organizations, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["organization"].queryset = organizations
