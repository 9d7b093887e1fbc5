"""What every list filter over tenant data is built from, so filters go through the gate too: a choice of
organizations or of tenant rows offers only what the caller may see, and another org's slug or id is "not one
of the available choices" — the same answer as one that does not exist."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _

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
