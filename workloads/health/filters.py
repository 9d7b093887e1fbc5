"""Filters of health event lists, shared by the pages and the API."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from django_filters import rest_framework as filters

from tenants.filters import ALL, organization_choice
from workloads.clusters.filters import cluster_choice
from workloads.health.models import HealthEvent


class HealthEventFilter(filters.FilterSet):
    organization = organization_choice()
    cluster = cluster_choice()
    # A choice, not a BooleanFilter: "maybe" is a 400, not silently every event.
    open = filters.ChoiceFilter(
        label=_("Open"),
        empty_label=ALL,
        choices=[("true", _("Open")), ("false", _("Resolved"))],
        method="filter_open",
        help_text="true: conditions that still hold; false: resolved ones.",
    )
    severity = filters.ChoiceFilter(label=_("Severity"), empty_label=ALL, choices=HealthEvent.Severity.choices)
    kind = filters.ChoiceFilter(label=_("Kind"), empty_label=ALL, choices=HealthEvent.Kind.choices)
    instance_id = filters.CharFilter(label=_("Instance"))

    class Meta:
        model = HealthEvent
        fields = ["organization", "cluster", "open", "severity", "kind", "instance_id"]

    def filter_open(self, queryset, name, value):
        return queryset.filter(resolved_at__isnull=value == "true")
