"""Filters of the cluster API list, and the cluster choice other lists filter by."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from django_filters import rest_framework as filters

from tenants.filters import RowChoiceFilter, organization_choices, visible_rows
from tenants.models import Allocation
from workloads.clusters.models import Cluster


def cluster_choice_label(cluster: Cluster) -> str:
    """gpu-demo · Sakura Language Lab · #13 (Deleted): a name is reused when a cluster is made again."""
    label = f"{cluster.name} · {cluster.organization.name} · #{cluster.pk}"
    if cluster.status in (Cluster.Status.DELETED, Cluster.Status.FAILED):
        label += f" ({cluster.get_status_display()})"
    return label


def cluster_choice(field_name: str = "cluster") -> RowChoiceFilter:
    return RowChoiceFilter(
        Cluster, label=_("Cluster"), field_name=field_name, describe=cluster_choice_label, related=("organization",)
    )


class ClusterFilter(filters.FilterSet):
    organization = filters.ModelChoiceFilter(
        field_name="organization", to_field_name="slug", queryset=organization_choices
    )
    allocation = filters.ModelChoiceFilter(field_name="allocation", queryset=visible_rows(Allocation))

    class Meta:
        model = Cluster
        fields = ["organization", "status", "kind", "region", "allocation"]
