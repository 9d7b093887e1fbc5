"""Filters shared by the pages, their CSV export and the API, so all three answer the same question."""

from __future__ import annotations

from django.db.models import Q
from django.utils.translation import gettext_lazy as _
from django_filters import rest_framework as filters

from tenants.access import visible_organizations
from tenants.models import Organization
from workloads.models import ActionItem, Cluster, SupportCase, Workload
from workloads.review import parse_iso_week


def _organizations(request):
    # An org the caller cannot see is "not one of the available choices", like one that does not exist.
    if request is None:
        return Organization.objects.none()
    return visible_organizations(request.user).order_by("name")


ALL = _("All")


class WorkloadFilter(filters.FilterSet):
    organization = filters.ModelChoiceFilter(
        label=_("Organization"),
        field_name="organization",
        to_field_name="slug",
        queryset=_organizations,
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


class ClusterFilter(filters.FilterSet):
    organization = filters.ModelChoiceFilter(field_name="organization", to_field_name="slug", queryset=_organizations)

    class Meta:
        model = Cluster
        fields = ["organization", "status", "kind", "region", "allocation"]


class SupportCaseFilter(filters.FilterSet):
    organization = filters.ModelChoiceFilter(
        label=_("Organization"),
        field_name="organization",
        to_field_name="slug",
        queryset=_organizations,
        empty_label=ALL,
    )
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
    workload = filters.NumberFilter(label=_("Workload"), field_name="workload_id")

    class Meta:
        model = SupportCase
        fields = ["organization", "state", "status", "severity", "category", "assignee", "workload"]

    def filter_state(self, queryset, name, value):
        statuses = SupportCase.ACTIVE_STATUSES if value == "active" else SupportCase.DONE_STATUSES
        return queryset.filter(status__in=statuses)


class ActionItemFilter(filters.FilterSet):
    organization = filters.CharFilter(field_name="organization__slug")
    week = filters.CharFilter(method="filter_week", help_text="ISO week of the meeting, e.g. 2027-W05.")

    class Meta:
        model = ActionItem
        fields = ["status", "organization", "owner", "meeting", "case", "week"]

    def filter_week(self, queryset, name, value):
        try:
            return queryset.filter(meeting__week_start=parse_iso_week(value))
        except ValueError:
            return queryset.none()
