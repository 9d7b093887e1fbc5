"""The tracking view's filters, shared by the page, its CSV export, the printed document and the API, so all
of them answer the same question."""

from __future__ import annotations

from django.db.models import Q
from django.utils.translation import gettext_lazy as _
from django_filters import rest_framework as filters

from tenants.filters import ALL, RowChoiceFilter, organization_choice
from workloads.records.models import Workload


def workload_choice(field_name: str = "workload") -> RowChoiceFilter:
    """The workload choice other lists filter by: "sakura-70b-pretrain · Sakura Language Lab"."""
    return RowChoiceFilter(
        Workload,
        label=_("Workload"),
        field_name=field_name,
        describe=lambda workload: f"{workload.name} · {workload.organization.name}",
        related=("organization",),
    )


class WorkloadFilter(filters.FilterSet):
    organization = organization_choice()
    phase = filters.ChoiceFilter(label=_("Phase"), empty_label=ALL, choices=Workload.Phase.choices)
    framework = filters.ChoiceFilter(label=_("Framework"), empty_label=ALL, choices=Workload.Framework.choices)
    cluster_type = filters.ChoiceFilter(label=_("Cluster type"), empty_label=ALL, choices=Workload.ClusterType.choices)
    status = filters.ChoiceFilter(label=_("Status"), empty_label=ALL, choices=Workload.Status.choices)
    architecture = filters.ChoiceFilter(label=_("Architecture"), empty_label=ALL, choices=Workload.Architecture.choices)
    storage = filters.ChoiceFilter(label=_("Storage"), empty_label=ALL, choices=Workload.Storage.choices)
    q = filters.CharFilter(label=_("Search"), method="search", help_text="Part of the workload or model name.")

    class Meta:
        model = Workload
        fields = ["organization", "phase", "framework", "cluster_type", "status", "architecture", "storage", "q"]

    def search(self, queryset, name, value):
        return queryset.filter(Q(name__icontains=value) | Q(model_name__icontains=value))
