"""Sortable lists, on django-tables2: a page declares its columns once (header, the fields a sort orders by, whether
it may sort by them), and the library reads `?sort=col` / `?sort=-col` — ignoring a key that names no sortable
column, so a crafted URL can never order by an arbitrary field —, orders a queryset in the database or a bounded
list in Python, and pages the rows. Our templates keep drawing the cells (badges, two-line figures); the header
row is one shared partial (templates/portal/_sort_head.html) whose links swap the table in place with htmx and put
the sort in the URL, as the workload and support lists do.

A queryset column is sortable only where an index starts with its fields (tests/tenants/test_indexes.py reads the
tables' columns), so a page of 50 never sorts a whole table; a list of a few hundred rows computed per request
(an organization's figures) sorts by any column. Figures summed per row in SQL (thousands of organizations' usage)
are `DatabaseRows`: sorted and cut to the page in the database, only the page's rows built in Python.
"""

from __future__ import annotations

from collections.abc import Callable

import django_tables2 as tables
from django.core.paginator import Paginator
from django.db.models import F, QuerySet
from django_tables2.data import TableData
from django_tables2.utils import OrderBy

from portal.pages import BoundedPaginator


class Column(tables.Column):
    """A header with an optional second line (its unit: "instance-h") and a numeric cell's alignment."""

    def __init__(self, *args, unit: str = "", numeric: bool = False, **kwargs):
        if numeric:
            kwargs.setdefault("attrs", {"th": {"class": "num"}})
        super().__init__(*args, **kwargs)
        self.unit = unit


class SortedTable(tables.Table):
    class Meta:
        order_by_field = "sort"
        page_field = "page"
        per_page_field = None  # never taken from the URL: a page's size is the view's


class DatabaseRows(TableData):
    """A table's rows as a queryset of figures annotated per row (no index serves them): a sort orders by the
    column's fields in the database, rows without a figure last either way, then by `tie_break`; a page is a LIMIT
    and OFFSET; `count` says how many rows there are (a cheaper query than counting the annotated one); `records`
    turns a slice of the queryset into what the template draws. Without a sort the queryset's own order stands."""

    def __init__(
        self, queryset: QuerySet, *, records: Callable[[QuerySet], list], count: Callable[[], int], tie_break=("pk",)
    ):
        super().__init__(queryset)
        self.records, self.count, self.tie_break = records, count, tie_break

    def __len__(self) -> int:
        return self.count()

    def __getitem__(self, key):
        if isinstance(key, slice):
            return self.records(self.data[key])
        return self.records(self.data[key : key + 1])[0]

    def __iter__(self):
        return iter(self.records(self.data))

    def order_by(self, aliases) -> None:
        fields = []
        for alias in aliases:
            column = self.table.columns[OrderBy(alias).bare]
            # As django-tables2 reads it: the column's fields, the other way round when the alias says so.
            accessors = column.order_by if alias[0] == column.order_by_alias[0] else column.order_by.opposite
            for accessor in accessors:
                field = F(accessor.bare.replace(".", "__"))
                fields.append(field.desc(nulls_last=True) if accessor.is_descending else field.asc(nulls_last=True))
        if fields:
            self.data = self.data.order_by(*fields, *self.tie_break)


def sort_table(request, table: SortedTable, *, per_page: int | None = None, bounded: bool = False) -> SortedTable:
    """Apply the request's `?sort=` (one column, so every ordering is a single index's) and, given `per_page`, its
    `?page=` — a missing, malformed or too large page number gives the nearest page, never a 404. `bounded`
    (a queryset table over a whole table's rows): the page is cut from the sorted queryset itself and its count
    stops a few pages ahead (portal.pages.BoundedPaginator), so no request counts every row."""
    key = request.GET.get(table.prefixed_order_by_field, "")
    name = key.removeprefix("-")
    if name in table.columns and table.columns[name].orderable:
        table.order_by = (key,)
    table.sort_key = table.order_by[0] if table.order_by else ""
    # Each header's link: the other filters kept, this table's sort set (the other way when it is the sort already),
    # back to page 1; a second table on the page has its own `prefix`, so the two sort independently.
    table.headers = []
    for column in table.columns:
        href = ""
        if column.orderable:
            params = request.GET.copy()
            params[table.prefixed_order_by_field] = column.order_by_alias.next
            params.pop(table.prefixed_page_field, None)
            href = "?" + params.urlencode()
        table.headers.append({"column": column, "href": href})
    if per_page and bounded:
        wanted = request.GET.get(table.prefixed_page_field)
        table.paginator = BoundedPaginator(table.data.data, per_page, wanted=wanted)
        table.page = table.paginator.get_page(wanted)
        table.page.object_list = list(table.page.object_list)
    elif per_page:
        table.paginator = Paginator(table.rows, per_page)
        table.page = table.paginator.get_page(request.GET.get(table.prefixed_page_field))
        # The page's objects themselves (not the library's row wrappers): our templates draw the cells from them.
        table.page.object_list = [row.record for row in table.page.object_list]
    return table


def orderings(table_class: type[SortedTable]) -> list[tuple[str, tuple[str, ...]]]:
    """Every ordering a table accepts, as (column, fields), for the index test."""
    table = table_class([])
    return [
        (column.name, tuple(str(field).lstrip("-") for field in column.order_by))
        for column in table.columns
        if column.orderable
    ]
