"""What every page view shares: htmx fragments, forms with errors, sorting and paging.

A view that can answer an htmx request with a fragment renders through `render_page` (or `render_form`): the
response then varies on HX-Request, so a cache never hands the fragment to a full page load, and a history
restore (htmx re-requesting a pushed URL it no longer has, e.g. after Back) gets the whole page. No view
reads `request.htmx` itself (tests/test_pages.py keeps it so).
"""

from __future__ import annotations

from functools import cached_property

from django.core.paginator import Page, Paginator
from django.db.models import QuerySet
from django.http import HttpResponse
from django.shortcuts import render
from django.utils.cache import patch_vary_headers


def is_fragment(request) -> bool:
    """An htmx request wants a fragment, except when htmx restores a pushed URL missing from its history
    cache (back button): then it needs the whole page."""
    htmx = getattr(request, "htmx", None)
    return bool(htmx) and not htmx.history_restore_request


def varies_on_htmx(response: HttpResponse) -> HttpResponse:
    patch_vary_headers(response, ["HX-Request"])
    return response


def fragment_for(request, default: str, *, by_target: dict[str, str]) -> str:
    """Which fragment a page with more than one swappable part answers: the one htmx targets (its HX-Target, the
    element's id), else `default`. A sortable table's header targets its own part (portal/tables.py)."""
    target = getattr(getattr(request, "htmx", None), "target", None) or ""
    return by_target.get(target, default)


def render_page(request, template: str, context: dict, *, fragment: str | None = None, status: int = 200):
    """The page, or only its `{% partialdef fragment %}` when htmx asks for a fragment."""
    if fragment and is_fragment(request):
        return varies_on_htmx(render(request, f"{template}#{fragment}", context, status=status))
    return varies_on_htmx(render(request, template, context, status=status))


def render_form(request, template: str, context: dict, *, fragment: str | None = None, invalid: bool):
    """Full pages with form errors answer 400; an htmx fragment answers 200 so htmx swaps the errors in."""
    if fragment and is_fragment(request):
        return render_page(request, template, context, fragment=fragment)
    return render_page(request, template, context, status=400 if invalid else 200)


def sort_by(queryset: QuerySet, sorts: dict[str, tuple[str, ...]], key: str, default: str) -> tuple[QuerySet, str]:
    """Order by the `?sort=` key (a leading "-" reverses every field of it); an unknown key gets `default`.
    Returns the ordered queryset and the key actually used, for the column headers."""
    name = key.removeprefix("-")
    if name not in sorts:
        key, name = default, default.removeprefix("-")
    fields = sorts[name]
    if key.startswith("-"):
        fields = tuple(f.removeprefix("-") if f.startswith("-") else f"-{f}" for f in fields)
    return queryset.order_by(*fields), key


def paginate(request, rows, per_page: int, *, param: str = "page") -> Page:
    """One page of `rows`; a missing, malformed or too large page number gives the nearest page, not a 404."""
    return Paginator(rows, per_page).get_page(request.GET.get(param))


LOOKAHEAD_PAGES = 10  # a bounded count looks this many pages past the one asked for


class BoundedPaginator(Paginator):
    """Pages of a list that may hold a whole table: it counts rows only up to `LOOKAHEAD_PAGES` pages past the
    page asked for (`SELECT COUNT(*) FROM (… LIMIT n)`, an index's first rows), never the whole table. Past the
    bound, `count_is_exact` is False and `count` is the bound plus one: the pagination then says "more than",
    and the page after the bound is still reachable, so a reader can page on. The cost of the first page is
    the same at 1,000 rows and at 1,000,000."""

    def __init__(self, object_list, per_page, *, wanted=None, **kwargs):
        super().__init__(object_list, per_page, **kwargs)
        page = id_param(wanted) or 1
        self.bound = (min(page, 10**6) + LOOKAHEAD_PAGES) * int(per_page)

    @cached_property
    def count(self) -> int:
        if isinstance(self.object_list, QuerySet):
            return self.object_list.order_by()[: self.bound + 1].count()
        return min(len(self.object_list), self.bound + 1)

    @property
    def count_is_exact(self) -> bool:
        return self.count <= self.bound

    @property
    def pages_at_least(self) -> int:
        """Pages known to exist when the count stops at the bound (all of them full)."""
        return self.bound // self.per_page


def bounded_paginate(request, rows, per_page: int, *, param: str = "page") -> Page:
    """`paginate` with a bounded count (BoundedPaginator): for lists that grow with a whole table."""
    wanted = request.GET.get(param)
    return BoundedPaginator(rows, per_page, wanted=wanted).get_page(wanted)


def id_param(value) -> int | None:
    """An object id from a query string or form field: ASCII digits that fit a 64-bit key, else None (so "abc",
    "²" or an id past the database's range is "no such object", never a ValueError or an overflow)."""
    text = str(value or "")
    if not (text.isascii() and text.isdigit()) or len(text) > 19:
        return None
    number = int(text)
    return number if number < 2**63 else None


class Choice(str):
    """A query parameter read by `choice_param`: its value ("" when missing or refused) and whether it was one of
    the choices (False: the page answers 400 and lists nothing, as a filter form does for a value it refuses)."""

    valid: bool = True


def choice_param(request, name: str, choices) -> Choice:
    """A filter parameter that must be one of `choices` (an organization's slug, a status). Anything else — a typo,
    a crafted value, a NUL PostgreSQL refuses in any text — never reaches the database."""
    value = request.GET.get(name, "")
    if not value:
        return Choice("")
    if value in {str(choice) for choice in choices}:
        return Choice(value)
    refused = Choice("")
    refused.valid = False
    return refused
