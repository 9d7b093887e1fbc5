"""The weekly review's organization table sorts by its columns (portal.tables, django-tables2): a bounded list of
the organizations a reader may see, sorted in Python; counts sort as numbers (`OrgWeek.counts`)."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from portal.tables import Column, SortedTable


class ReviewTable(SortedTable):
    organization = Column(_("Organization"), accessor="organization__name")
    open_cases = Column(_("Open cases"), accessor="counts__open_cases", numeric=True)
    stale_cases = Column(_("No update for 7 days"), accessor="counts__stale_cases", numeric=True)
    opened = Column(_("Opened this week"), accessor="counts__opened", numeric=True)
    resolved = Column(_("Resolved this week"), accessor="counts__resolved", numeric=True)
    workloads = Column(_("Workloads changed"), accessor="counts__workloads", numeric=True)
    action_items = Column(_("Open action items"), accessor="counts__action_items", numeric=True)
    running = Column(_("Running"), accessor="usage__running", unit=_("of allocated instance-h"), numeric=True)
    utilization = Column(_("Utilization"), accessor="usage__utilization", unit=_("change"), numeric=True)
    running_cost = Column(_("Running cost"), accessor="usage__running_cost", unit=_("of allocated"), numeric=True)
    idle_cost = Column(_("Idle cost"), accessor="usage__idle_cost", numeric=True)
