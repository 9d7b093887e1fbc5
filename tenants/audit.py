"""The audit trail: every capacity decision and allocation change, append-only (who, when, what, before → after).
A person's own account (password, second factor) belongs to no organization, nor does a capacity plan (it spans
them): their events have none, and only program staff see them."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from tenants.models import AuditEvent, Organization


def record_audit(
    *, actor, organization: Organization | None, action: str, target, changes: dict | None = None, comment: str = ""
) -> AuditEvent:
    """Append one audit event; `changes` maps a field to [before, after]."""
    return AuditEvent.objects.create(
        actor=actor if actor is not None and actor.is_authenticated else None,
        organization=organization,
        action=action,
        target_type=target._meta.model_name,
        target_id=target.pk,
        changes={field: [plain(a), plain(b)] for field, (a, b) in (changes or {}).items()},
        comment=comment,
    )


def plain(value):
    if isinstance(value, date | Decimal):
        return str(value)
    return value
