"""Filters of the outcomes API lists. Organizations, milestones and model releases are offered only as far as the
caller may see them (tenants.filters), so another organization's is "not one of the available choices"."""

from __future__ import annotations

from django.conf import settings
from django.utils.translation import gettext_lazy as _
from django_filters import rest_framework as filters

from tenants.filters import ALL, RowChoiceFilter, organization_choice
from workloads.outcomes.milestones import STATES, milestone_states
from workloads.outcomes.models import Budget, Deliverable, Milestone, Report


class MilestoneFilter(filters.FilterSet):
    organization = organization_choice()
    status = filters.ChoiceFilter(label=_("Status"), empty_label=ALL, choices=Milestone.Status.choices)
    state = filters.ChoiceFilter(
        label=_("State"),
        empty_label=ALL,
        choices=list(STATES.items()),
        method="filter_state",
        help_text="Where the milestone stands now, as in the response's state (computed, not stored).",
    )
    due_from = filters.DateFilter(
        field_name="due_on", lookup_expr="gte", label=_("Due from"), help_text="Due on this day or later."
    )
    due_to = filters.DateFilter(
        field_name="due_on", lookup_expr="lte", label=_("Due until"), help_text="Due on this day or earlier."
    )

    class Meta:
        model = Milestone
        fields = ["organization", "status", "state", "due_from", "due_to"]

    def filter_state(self, queryset, name, value):
        # The state is computed from the milestones' workloads' progress (workloads.outcomes.milestones), so it is
        # read for the rows the other filters leave, and the list narrowed to those in it.
        states = milestone_states(queryset.select_related("workload"))
        return queryset.filter(pk__in=[s.milestone.pk for s in states if s.state == value])


class DeliverableFilter(filters.FilterSet):
    organization = organization_choice()
    kind = filters.ChoiceFilter(label=_("Kind"), empty_label=ALL, choices=Deliverable.Kind.choices)
    milestone = RowChoiceFilter(Milestone, label=_("Milestone"), field_name="milestone")

    class Meta:
        model = Deliverable
        fields = ["organization", "kind", "milestone"]


class BudgetFilter(filters.FilterSet):
    organization = organization_choice()

    class Meta:
        model = Budget
        fields = ["organization"]


class ReportFilter(filters.FilterSet):
    organization = organization_choice()
    kind = filters.ChoiceFilter(label=_("Kind"), empty_label=ALL, choices=Report.Kind.choices)
    language = filters.ChoiceFilter(label=_("Language"), empty_label=ALL, choices=settings.LANGUAGES)

    class Meta:
        model = Report
        fields = ["organization", "kind", "language"]
