"""The allocation lists' sortable columns (portal.tables, django-tables2): the staff allocations page, an
organization's capacity page. They sort in the database by the allocation's own fields, each served by an index
(tests/tenants/test_indexes.py); the figures to date (granted, ran, utilization, remaining) are computed for the
page shown only, so they do not sort."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from portal.tables import Column, SortedTable


class AllocationTable(SortedTable):
    number = Column("#", accessor="pk", order_by=("id",))
    organization = Column(_("Organization"), orderable=False)
    instances = Column(_("Instances"), accessor="instance_count", order_by=("instance_count", "id"))
    # The window's cell carries the allocation's status too: one column less, so the table fits 1280 px.
    window = Column(_("Window"), accessor="starts_on", order_by=("starts_on", "id"))
    # Whole-window and to-date figures say which they are, as on every allocation table.
    granted = Column(
        _("Granted"),
        empty_values=(),
        orderable=False,
        unit=pgettext_lazy("whole allocation window", "window"),
        numeric=True,
    )
    ran = Column(_("Ran"), empty_values=(), orderable=False, unit=_("to date"), numeric=True)
    utilization = Column(_("Utilization"), empty_values=(), orderable=False, unit=_("to date"), numeric=True)
    remaining = Column(_("Remaining"), empty_values=(), orderable=False, unit=_("granted − ran"), numeric=True)
    actions = Column("", empty_values=(), orderable=False)
