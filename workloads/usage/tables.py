"""The usage pages' sortable tables (portal.tables, django-tables2): the program's organizations and pools. Their rows
are figures computed per request for the organizations a reader may see (a bounded list), so every column sorts,
in Python; the page's own order (the report's) stands until a header is clicked."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from portal.tables import Column, SortedTable


class OrgUsageTable(SortedTable):
    organization = Column(_("Organization"), accessor="organization__name")
    allocated = Column(_("Allocated"), accessor="figures__allocated", unit=_("instance-h"), numeric=True)
    running = Column(_("Running"), accessor="figures__running", unit=_("instance-h"), numeric=True)
    utilization = Column(_("Utilization"), accessor="figures__utilization", numeric=True)
    change = Column(_("Change"), accessor="change", numeric=True)
    accelerators = Column(
        _("Accelerator-h"), accessor="figures__running_accelerators", unit=_("running / allocated / busy"), numeric=True
    )
    allocated_cost = Column(_("Allocated cost"), accessor="figures__allocated_cost", numeric=True)
    running_cost = Column(_("Running cost"), accessor="figures__running_cost", numeric=True)
    idle_cost = Column(_("Idle cost"), accessor="figures__idle_cost", unit=_("over allocation apart"), numeric=True)
    # Its second line says through which day Cost Explorer has settled (set per request: billed_through_unit).
    billed = Column(_("Billed (AWS)"), accessor="billed", numeric=True)


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
