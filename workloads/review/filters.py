"""Filters of the action-item API list."""

from __future__ import annotations

from django_filters import rest_framework as filters

from portal.periods import parse_iso_week
from tenants.filters import visible_rows
from workloads.review.models import ActionItem
from workloads.support.models import SupportCase


class ActionItemFilter(filters.FilterSet):
    organization = filters.CharFilter(field_name="organization__slug")
    case = filters.ModelChoiceFilter(field_name="case", queryset=visible_rows(SupportCase))
    week = filters.CharFilter(method="filter_week", help_text="ISO week of the meeting, e.g. 2027-W05.")

    class Meta:
        model = ActionItem
        fields = ["status", "organization", "owner", "meeting", "case", "week"]

    def filter_week(self, queryset, name, value):
        try:
            return queryset.filter(meeting__week_start=parse_iso_week(value))
        except ValueError:
            return queryset.none()
