from tenants.access import staff_role
from tenants.models import CapacityRequest
from workloads.health.models import HealthEvent

NAV_REVIEW_MAX = 99


def staff_counts(request) -> dict:
    """The top bar's counts for program staff: open critical incidents and requests waiting for review (two
    counts on indexed columns, on staff pages only)."""
    user = request.user
    if not user.is_authenticated or staff_role(user) is None:
        return {}
    return {
        "nav_incidents": HealthEvent.objects.visible_to(user)
        .filter(resolved_at=None, severity=HealthEvent.Severity.CRITICAL)
        .count(),
        # Counted up to NAV_REVIEW_MAX only (the queue's first rows on its index): the badge reads "99+" beyond,
        # so a page's cost does not grow with the queue.
        "nav_review": CapacityRequest.objects.visible_to(user)
        .filter(status=CapacityRequest.Status.SUBMITTED)
        .order_by()
        .values("pk")[: NAV_REVIEW_MAX + 1]
        .count(),
        "nav_review_max": NAV_REVIEW_MAX,
    }
