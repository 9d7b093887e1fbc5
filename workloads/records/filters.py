"""The tracking view's filters, shared by the page, its CSV export, the printed document and the API, so all
of them answer the same question."""

from __future__ import annotations

from django.db.models import Q
from django.utils.translation import gettext_lazy as _
from django_filters import rest_framework as filters

from tenants.filters import ALL, organization_choices
from workloads.records.models import Workload


class WorkloadFilter(filters.FilterSet):
    organization = filters.ModelChoiceFilter(
        label=_("Organization"),
        field_name="organization",
        to_field_name="slug",
        queryset=organization_choices,
        empty_label=ALL,
    )
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
