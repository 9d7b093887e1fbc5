from tenants.access import staff_role
from tenants.models import CapacityRequest
from workloads.health.models import HealthEvent


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
        "nav_review": CapacityRequest.objects.visible_to(user).filter(status=CapacityRequest.Status.SUBMITTED).count(),
    }
