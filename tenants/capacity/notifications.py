"""Email to an organization's members about its capacity: decisions on its requests, a revoked allocation. Each is
written in the organization's email language (Organization.language), whoever's request made the change."""

from __future__ import annotations

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.utils import translation
from django.utils.translation import gettext as _

from portal.links import portal_url
from tenants.capacity.revocation import DoomedCluster
from tenants.models import Allocation, CapacityRequest, Organization


def notify_members(organization: Organization, subject: str, body: str) -> None:
    recipients = sorted(
        {email for email in organization.memberships.values_list("user__email", flat=True) if email}
        | ({organization.contact_email} if organization.contact_email else set())
    )
    if recipients:
        # Sent only once the decision is committed; a rolled-back approval mails nobody.
        transaction.on_commit(
            lambda: send_mail(subject, body, settings.DEFAULT_FROM_EMAIL, recipients, fail_silently=True)
        )


def notify_decision(capacity_request: CapacityRequest, allocation: Allocation | None) -> None:
    with translation.override(capacity_request.organization.language):
        _notify_decision(capacity_request, allocation)


def _notify_decision(capacity_request: CapacityRequest, allocation: Allocation | None) -> None:
    status = capacity_request.get_status_display()
    lines = [
        _("Your capacity request %(id)s (%(count)s × %(pool)s, %(start)s – %(end)s) was %(status)s.")
        % {
            "id": capacity_request.number,
            "count": capacity_request.instance_count,
            "pool": capacity_request.pool,
            "start": capacity_request.starts_on,
            "end": capacity_request.ends_on,
            "status": status.lower(),
        }
    ]
    if allocation is not None:
        lines.append(
            _("Allocated (%(id)s): %(count)s instances from %(start)s to %(end)s.")
            % {
                "id": allocation.number,
                "count": allocation.instance_count,
                "start": allocation.starts_on,
                "end": allocation.ends_on,
            }
        )
    if capacity_request.decision_comment:
        lines.append(_("Comment: %(comment)s") % {"comment": capacity_request.decision_comment})
    lines.append(
        _("Open the request in the portal: %(url)s")
        % {"url": portal_url("capacity-request", capacity_request.organization.slug, capacity_request.pk)}
    )
    notify_members(
        capacity_request.organization,
        _("Capacity request %(id)s: %(status)s") % {"id": capacity_request.number, "status": status},
        "\n\n".join(lines),
    )


def notify_revocation(allocation: Allocation, clusters: list[DoomedCluster]) -> None:
    """The organization hears that its allocation was revoked, why, and which of its clusters are being deleted."""
    with translation.override(allocation.organization.language):
        if clusters:
            deleted = _("These clusters of yours are being deleted: %(names)s.") % {
                "names": ", ".join(cluster.name for cluster in clusters)
            }
        else:
            deleted = _("None of your clusters is deleted.")
        notify_members(
            allocation.organization,
            _("Allocation revoked: %(allocation)s") % {"allocation": allocation},
            "\n\n".join(
                [
                    _("A program manager revoked this allocation; its instances return to the pool."),
                    deleted,
                    _("Reason: %(reason)s") % {"reason": allocation.revoke_reason},
                    _("Your capacity in the portal: %(url)s")
                    % {"url": portal_url("capacity", allocation.organization.slug)},
                ]
            ),
        )
