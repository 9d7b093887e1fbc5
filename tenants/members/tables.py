"""The members list's sortable columns (portal.tables, django-tables2). An organization has tens of members, so
any column sorts."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from portal.tables import Column, SortedTable


class MemberTable(SortedTable):
    username = Column(_("User"), accessor="user__username", order_by=("user__username",))
    name = Column(_("Name"), accessor="user__last_name", order_by=("user__last_name", "user__first_name"))
    email = Column(_("Email"), accessor="user__email", order_by=("user__email",))
    role = Column(_("Role"), order_by=("role", "user__username"))
    source = Column(_("Granted by"), order_by=("source", "user__username"))
    joined = Column(_("Joined"), accessor="created_at", order_by=("created_at", "pk"))
    actions = Column("", empty_values=(), orderable=False)
