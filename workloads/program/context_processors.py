from django.db.models import Count

from tenants.access import is_program_manager, staff_role
from tenants.models import CapacityRequest
from workloads.health.models import HealthEvent
from workloads.support.models import SupportCase

NAV_REVIEW_MAX = 99


def staff_counts(request) -> dict:
    """The top bar's counts for program staff: open critical incidents, and for program managers, who decide
    them, the requests waiting for review (a support engineer reads the queue but cannot act on it: no count
    asks them to). Counts on indexed columns, on staff pages only."""
    user = request.user
    if not user.is_authenticated or staff_role(user) is None:
        return {}
    incidents = {
        "nav_incidents": HealthEvent.objects.visible_to(user)
        .filter(resolved_at=None, severity=HealthEvent.Severity.CRITICAL)
        .count(),
    }
    if not is_program_manager(user):
        return incidents
    return {
        **incidents,
        # Counted up to NAV_REVIEW_MAX only (the queue's first rows on its index): the badge reads "99+" beyond,
        # so a page's cost does not grow with the queue.
        "nav_review": CapacityRequest.objects.visible_to(user)
        .filter(status=CapacityRequest.Status.SUBMITTED)
        .order_by()
        .values("pk")[: NAV_REVIEW_MAX + 1]
        .count(),
        "nav_review_max": NAV_REVIEW_MAX,
    }


def tenant_counts(request) -> dict:
    """The top bar's count for a tenant team, beside each of its organizations: what waits for the team — cases
    waiting for its answer and capacity requests drafted but not sent (two grouped counts, on tenants' pages
    only)."""
    user = request.user
    if not user.is_authenticated or staff_role(user) is not None:
        return {}
    waiting: dict[int, int] = {}
    for rows in (
        SupportCase.objects.visible_to(user).filter(status=SupportCase.Status.WAITING_ON_TENANT),
        CapacityRequest.objects.visible_to(user).filter(status=CapacityRequest.Status.DRAFT),
    ):
        for org_id, count in rows.order_by().values_list("organization_id").annotate(n=Count("pk")):
            waiting[org_id] = waiting.get(org_id, 0) + count
    return {"nav_waiting": waiting}
