"""Filters of the cluster API list."""

from __future__ import annotations

from django_filters import rest_framework as filters

from tenants.filters import organization_choices, visible_rows
from tenants.models import Allocation
from workloads.clusters.models import Cluster


class ClusterFilter(filters.FilterSet):
    organization = filters.ModelChoiceFilter(
        field_name="organization", to_field_name="slug", queryset=organization_choices
    )
    allocation = filters.ModelChoiceFilter(field_name="allocation", queryset=visible_rows(Allocation))

    class Meta:
        model = Cluster
        fields = ["organization", "status", "kind", "region", "allocation"]
