"""The job list's sortable columns (portal.tables, django-tables2): jobs run to tens of thousands per cluster, so
a column sorts only by fields an index starts with (Job.Meta.indexes; tests/tenants/test_indexes.py)."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from portal.tables import Column, SortedTable


class JobTable(SortedTable):
    job = Column(_("Job"), accessor="job_id", order_by=("submitted_at", "id"))
    cluster = Column(_("Cluster"), orderable=False)
    user = Column(_("User"), accessor="user", order_by=("user", "id"))
    state = Column(_("State"), orderable=False)
    nodes = Column(_("Nodes"), accessor="node_count", orderable=False, numeric=True)
    accelerators = Column(_("Accelerators"), accessor="accelerators", order_by=("accelerators", "id"), numeric=True)
    ran = Column(_("Ran"), accessor="started_at", order_by=("started_at", "id"))
    accelerator_hours = Column(_("Accelerator-hours"), empty_values=(), orderable=False, numeric=True)
