"""The workload record form: parses what people type (sizes in billions); records.services decides and writes."""

from __future__ import annotations

from decimal import Decimal

from django import forms
from django.utils.translation import gettext_lazy as _

from tenants.capacity.estimate import MAX_PARAMETERS, MAX_TOKENS
from tenants.capacity.forms import BILLION, in_billions
from tenants.models import Allocation, Organization
from workloads.records.models import MAX_PARALLEL_DEGREE, Workload


class BillionsField(forms.DecimalField):
    """A count typed in billions, as people talk about model sizes and token budgets (405, 0.5, 15000)."""

    def __init__(self, **kwargs):
        kwargs.setdefault("min_value", Decimal("0.001"))
        super().__init__(max_digits=15, decimal_places=3, **kwargs)

    def clean(self, value):
        number = super().clean(value)
        return None if number is None else int(number * BILLION)


class AllocationChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, allocation: Allocation) -> str:
        return (
            f"{allocation.number} · {allocation.instance_count} × {allocation.pool.instance_type} · "
            f"{allocation.pool.region} · {allocation.starts_on:%Y-%m-%d} – {allocation.ends_on:%Y-%m-%d} "
            f"({allocation.get_status_display()})"
        )


class WorkloadForm(forms.Form):
    name = forms.CharField(label=_("Name"), max_length=200)
    phase = forms.ChoiceField(label=_("Phase"), choices=Workload.Phase.choices)
    status = forms.ChoiceField(label=_("Status"), choices=Workload.Status.choices, initial=Workload.Status.PLANNED)
    model_name = forms.CharField(
        label=_("Model name"), max_length=200, required=False, help_text=_("For example: Sakura-LM 70B v2")
    )
    architecture = forms.ChoiceField(label=_("Architecture"), choices=Workload.Architecture.choices)
    parameter_count = BillionsField(label=_("Parameters (billions)"), max_value=MAX_PARAMETERS / BILLION)
    active_parameter_count = BillionsField(
        label=_("Active parameters (billions)"),
        max_value=MAX_PARAMETERS / BILLION,
        required=False,
        help_text=_("Mixture-of-experts models only."),
    )
    target_tokens = BillionsField(
        label=_("Target tokens (billions)"),
        max_value=MAX_TOKENS / BILLION,
        required=False,
        help_text=_("15 trillion tokens: 15000."),
    )
    framework = forms.ChoiceField(label=_("Framework"), choices=Workload.Framework.choices)
    tensor_parallel = forms.IntegerField(
        label=_("Tensor parallel"), min_value=1, max_value=MAX_PARALLEL_DEGREE, initial=1
    )
    pipeline_parallel = forms.IntegerField(
        label=_("Pipeline parallel"), min_value=1, max_value=MAX_PARALLEL_DEGREE, initial=1
    )
    data_parallel = forms.IntegerField(label=_("Data parallel"), min_value=1, max_value=MAX_PARALLEL_DEGREE, initial=1)
    expert_parallel = forms.IntegerField(
        label=_("Expert parallel"), min_value=1, max_value=MAX_PARALLEL_DEGREE, initial=1
    )
    cluster_type = forms.ChoiceField(label=_("Cluster type"), choices=Workload.ClusterType.choices)
    storage = forms.ChoiceField(label=_("Storage"), choices=Workload.Storage.choices)
    allocation = AllocationChoiceField(
        label=_("Allocation"), queryset=Allocation.objects.none(), required=False, empty_label=_("none")
    )
    notes = forms.CharField(label=_("Notes"), widget=forms.Textarea(attrs={"rows": 4}), required=False)

    def __init__(self, *args, organization: Organization, workload: Workload | None = None, **kwargs):
        if workload is not None and "initial" not in kwargs:
            kwargs["initial"] = self.initial_for(workload)
        super().__init__(*args, **kwargs)
        # Only this organization's allocations can be linked; another org's id is "not one of the choices".
        self.fields["allocation"].queryset = (
            Allocation.objects.for_org(organization).select_related("pool__instance_type").order_by("starts_on", "pk")
        )

    @staticmethod
    def initial_for(workload: Workload) -> dict:
        initial = {name: getattr(workload, name) for name in WorkloadForm.base_fields}
        for name in ("parameter_count", "active_parameter_count", "target_tokens"):
            initial[name] = in_billions(getattr(workload, name))
        initial["allocation"] = workload.allocation_id
        return initial

    @property
    def changes(self) -> dict:
        """The model fields to write (all of them for a new record)."""
        data = dict(self.cleaned_data)
        for name in ("model_name", "notes"):
            data[name] = data.get(name, "").strip()
        return data
