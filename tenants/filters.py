"""What every list filter over tenant data is built from, so filters go through the gate too: a choice of
organizations or of tenant rows offers only what the caller may see, and another org's slug or id is "not one
of the available choices" — the same answer as one that does not exist."""

from __future__ import annotations

from collections.abc import Callable

from django.utils.translation import gettext_lazy as _
from django_filters import rest_framework as filters

from tenants.access import visible_organizations
from tenants.models import Organization

ALL = _("All")


def organization_choices(request):
    """The organizations a filter may name (django-filter calls this with the request)."""
    if request is None:
        return Organization.objects.none()
    return visible_organizations(request.user).order_by("name")


def visible_rows(model):
    """A choice filter's rows of a tenant model: only what the caller may see."""

    def rows(request):
        return model.objects.none() if request is None else model.objects.visible_to(request.user)

    return rows


def organization_choice() -> filters.ModelChoiceFilter:
    """The organization a list is narrowed to, by slug, picked by name on the pages ("All" when none)."""
    return filters.ModelChoiceFilter(
        label=_("Organization"),
        field_name="organization",
        to_field_name="slug",
        queryset=organization_choices,
        empty_label=ALL,
    )


class RowChoiceFilter(filters.ModelChoiceFilter):
    """A choice of one tenant model's rows the caller may see, "All" when none is chosen; `describe` names each
    option (rows of one name — a cluster made again, two orgs' "pretrain" — must read apart), `related` is
    fetched with the rows so naming them costs no query each."""

    def __init__(self, model, *, describe: Callable | None = None, related: tuple[str, ...] = (), **kwargs):
        def rows(request):
            return visible_rows(model)(request).select_related(*related)

        kwargs.setdefault("empty_label", ALL)
        super().__init__(queryset=rows, **kwargs)
        self.describe = describe

    @property
    def field(self):
        field = super().field
        if self.describe is not None:
            field.label_from_instance = self.describe
        return field
