"""What every list filter over tenant data is built from, so filters go through the gate too: a choice of
organizations or of tenant rows offers only what the caller may see, and another org's slug or id is "not one
of the available choices" — the same answer as one that does not exist."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.db.models import Q
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


SUGGESTIONS = 20  # organizations offered under the search field at most
NAME_MAX = 200  # Organization.name's max_length: anything longer names none


def _searchable(text: str) -> bool:
    """Text that may reach the database: printable (a NUL, which PostgreSQL refuses in any text, never does) and
    no longer than a name."""
    return len(text) <= NAME_MAX and text.isprintable()


@dataclass(frozen=True)
class OrganizationFilter:
    """A list's organization filter, typed into a search field (a slug or a name): `text` as typed, shown back in
    the field; `organization` the one it names ({"pk", "slug", "name"}) among those the caller may see, or None.
    `valid` is False when text was given and names no organization the caller may see: the list is then empty
    and says so (another tenant's organization is "no match", the same as one that does not exist)."""

    text: str = ""
    organization: dict | None = None
    given: bool = False  # the parameter was there (even if refused before the database)

    @property
    def valid(self) -> bool:
        return not self.given or self.organization is not None

    @property
    def slug(self) -> str:
        return self.organization["slug"] if self.organization else ""


def organization_filter(request, name: str = "org") -> OrganizationFilter:
    """The organization `?org=` names, by slug or (case-insensitively) by name: one indexed query for a row,
    never every organization."""
    text = request.GET.get(name, "").strip()
    if not text:
        return OrganizationFilter()
    if not _searchable(text):
        return OrganizationFilter(given=True)  # refused before the database; nothing of it is shown back
    found = list(
        visible_organizations(request.user)
        .filter(Q(slug=text) | Q(name__iexact=text))
        .order_by("name")
        .values("pk", "slug", "name")[:2]
    )
    found.sort(key=lambda org: org["slug"] != text)  # a slug match first
    return OrganizationFilter(text=text, organization=found[0] if found else None, given=True)


def organization_suggestions(user, text: str) -> list[dict]:
    """At most SUGGESTIONS organizations the user may see whose name or slug contains `text`, by name: what the
    search field offers while one types. A tenant only ever gets its own organizations."""
    text = text.strip()
    if not text or not _searchable(text):
        return []
    matches = visible_organizations(user).filter(Q(name__icontains=text) | Q(slug__icontains=text))
    return list(matches.order_by("name").values("slug", "name")[:SUGGESTIONS])
