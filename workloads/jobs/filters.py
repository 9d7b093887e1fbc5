"""Filters of job lists, shared by the pages and the API."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from django_filters import rest_framework as filters

from tenants.filters import ALL, organization_choice
from workloads.clusters.filters import cluster_choice
from workloads.jobs.models import Job
from workloads.jobs.sacct import HOLDING_STATES
from workloads.records.filters import workload_choice


class JobFilter(filters.FilterSet):
    organization = organization_choice()
    cluster = cluster_choice()
    workload = workload_choice("cluster__workload")
    show = filters.ChoiceFilter(
        label=_("Show"),
        empty_label=ALL,
        choices=[("running", _("Running now")), ("unknown", _("State unknown")), ("finished", _("Finished"))],
        method="filter_show",
        help_text="running: holding nodes now; unknown: last seen running, reporter silent or node gone; "
        "finished: every other state.",
    )
    state = filters.CharFilter(label=_("Slurm state"), help_text="A Slurm state word: RUNNING, COMPLETED, FAILED…")
    user = filters.CharFilter(label=_("User"))
    partition = filters.CharFilter(label=_("Partition"))

    class Meta:
        model = Job
        fields = ["organization", "cluster", "workload", "show", "state", "user", "partition"]

    def filter_show(self, queryset, name, value):
        if value == "running":
            return queryset.running()
        if value == "unknown":
            return queryset.holding().exclude(state_unknown_since=None)
        return queryset.exclude(state__in=HOLDING_STATES)
