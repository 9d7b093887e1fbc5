"""The case list's filters, shared by the page and the API."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from django_filters import rest_framework as filters

from tenants.filters import ALL, organization_choice
from workloads.clusters.filters import cluster_choice
from workloads.records.filters import workload_choice
from workloads.support.models import SupportCase


class SupportCaseFilter(filters.FilterSet):
    organization = organization_choice()
    state = filters.ChoiceFilter(
        label=_("Open or done"),
        empty_label=ALL,
        choices=[("active", _("Open, in progress or waiting")), ("done", _("Resolved or closed"))],
        method="filter_state",
        help_text="active: open, in progress or waiting on tenant; done: resolved or closed.",
    )
    status = filters.ChoiceFilter(label=_("Status"), empty_label=ALL, choices=SupportCase.Status.choices)
    severity = filters.ChoiceFilter(label=_("Severity"), empty_label=ALL, choices=SupportCase.Severity.choices)
    category = filters.ChoiceFilter(label=_("Category"), empty_label=ALL, choices=SupportCase.Category.choices)
    assignee = filters.CharFilter(label=_("Assignee"), field_name="assignee__username", help_text="A username.")
    workload = workload_choice()
    cluster = cluster_choice()

    class Meta:
        model = SupportCase
        fields = ["organization", "state", "status", "severity", "category", "assignee", "workload", "cluster"]

    def filter_state(self, queryset, name, value):
        statuses = SupportCase.ACTIVE_STATUSES if value == "active" else SupportCase.DONE_STATUSES
        return queryset.filter(status__in=statuses)
