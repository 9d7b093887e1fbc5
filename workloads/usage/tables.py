"""The usage pages' sortable tables (portal.tables, django-tables2): the program's organizations and pools. The
organizations' figures are summed per organization in the database (reports.org_usage) and every column sorts
there by its annotation (`order_by`), so 2,000 organizations are sorted and paged without building 2,000 rows;
the pools (a handful) sort in Python. The page's own order (attention first) stands until a header is clicked."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from portal.tables import Column, SortedTable


class OrgUsageTable(SortedTable):
    organization = Column(_("Organization"), order_by="name")
    allocated = Column(_("Allocated"), order_by="allocated", unit=_("instance-h"), numeric=True)
    running = Column(_("Running"), order_by="running", unit=_("instance-h"), numeric=True)
    utilization = Column(_("Utilization"), order_by="utilization", numeric=True)
    change = Column(pgettext_lazy("utilization against the previous period", "Change"), order_by="change", numeric=True)
    accelerators = Column(
        _("Accelerator-h"), order_by="running_accelerators", unit=_("running / allocated / busy"), numeric=True
    )
    allocated_cost = Column(_("Allocated cost"), order_by="allocated_cost", numeric=True)
    running_cost = Column(_("Running cost"), order_by="running_cost", numeric=True)
    idle_cost = Column(_("Idle cost"), order_by="idle_cost", unit=_("over allocation apart"), numeric=True)
    # Its second line says through which day Cost Explorer has settled (set per request: billed_through_unit).
    billed = Column(_("Billed (AWS)"), order_by="billed", numeric=True)


class PoolUsageTable(SortedTable):
    pool = Column(
        _("Pool"), accessor="pool__instance_type__api_name", order_by=("pool__instance_type__api_name", "pool__region")
    )
    capacity = Column(_("Capacity"), accessor="capacity", unit=_("instance-h"), numeric=True)
    allocated = Column(_("Allocated"), accessor="figures__allocated", numeric=True)
    running = Column(_("Running"), accessor="figures__running", numeric=True)
    unallocated = Column(_("Unallocated"), accessor="unallocated", numeric=True)
    capacity_cost = Column(_("Pool cost"), accessor="capacity_cost", numeric=True)
    running_cost = Column(_("Running cost"), accessor="figures__running_cost", numeric=True)
    idle_cost = Column(_("Idle cost"), accessor="figures__idle_cost", unit=_("over allocation apart"), numeric=True)
    unallocated_cost = Column(_("Unallocated cost"), accessor="unallocated_cost", numeric=True)


def billed_through_unit(table: OrgUsageTable, *, billed_through) -> OrgUsageTable:
    """The billed column's second line: the last day Cost Explorer has settled, or that none is (each table has its
    own copy of its columns, so this never leaks into another request's)."""
    table.columns["billed"].column.unit = (
        _("through %(day)s") % {"day": billed_through.strftime("%m-%d")} if billed_through else _("none settled")
    )
    return table
