"""What the audit trail calls each action and where it shows each kind of object. Tenants' own are here; an app
that records its own actions (workloads: clusters, reporter tokens) registers theirs when it is ready, since tenants
never imports the apps built on it."""

from __future__ import annotations

from collections.abc import Callable

from django.apps import apps
from django.core.exceptions import FieldDoesNotExist
from django.db import models
from django.utils.formats import number_format
from django.utils.text import capfirst
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

ACTIONS = {
    "request.created": _("created the request"),
    "request.edited": _("edited the draft"),
    "request.submitted": _("submitted it for review"),
    "request.withdrawn": _("withdrew it"),
    "request.approved": _("approved it"),
    "request.partially_approved": _("approved it partially"),
    "request.rejected": _("rejected it"),
    "allocation.created": _("created the allocation"),
    "allocation.active": _("the allocation became active"),
    "allocation.expired": _("the allocation expired"),
    "allocation.revoked": _("revoked the allocation"),
    "plan.created": _("made a capacity plan"),
    "plan.applied": _("applied the capacity plan"),
    "sso.membership_granted": _("joined through institution sign-in"),
    "sso.role_changed": _("role changed by institution sign-in"),
    "sso.membership_removed": _("left through institution sign-in"),
    "account.password_reset": _("set a new password through an emailed link"),
    "account.two_factor_enabled": _("set up two-factor authentication"),
    "account.recovery_codes": _("made new recovery codes"),
    "account.two_factor_reset": _("removed the account's authenticator app and recovery codes"),
    "member.invited": _("invited a person"),
    "member.invitation_revoked": _("revoked an invitation"),
    "member.joined": _("joined through an invitation"),
    "member.role_changed": _("changed a member's role"),
    "member.removed": _("removed a member"),
    "service_account.created": _("created a service account"),
    "service_account.changed": _("changed a service account"),
    "service_account.disabled": _("disabled a service account and revoked its tokens"),
    "service_account.enabled": _("enabled a service account again"),
    "service_account.token_created": _("created a service account's token"),
    "service_account.token_revoked": _("revoked a service account's token"),
    "scim.membership_granted": _("joined through provisioning (SCIM)"),
    "scim.role_changed": _("role changed by provisioning (SCIM)"),
    "scim.membership_removed": _("left through provisioning (SCIM)"),
    "scim.last_admin_kept": _("kept as the organization's last admin when provisioning (SCIM) deleted the account"),
    "scim.user_deactivated": _("account deactivated by provisioning (SCIM): tokens revoked, sessions ended"),
    "scim.user_reactivated": _("account reactivated by provisioning (SCIM)"),
    "scim.token_created": _("made a SCIM token"),
    "scim.token_revoked": _("revoked a SCIM token"),
}
# Object type (model name) → the name of the URL pattern showing one of them by its id.
PAGES: dict[str, str] = {"capacityplan": "capacity-plan-page"}
# Object type → who may open its page, where not every program staff member may: the others read its name unlinked.
READERS: dict[str, Callable] = {}
# Object type → what its events' details that are not the model's fields are called: key → (label, {value: words}).
DETAILS: dict[str, dict[str, tuple[str, dict | None]]] = {
    "serviceaccount": {
        "role": (
            _("Role"),
            {
                "member": pgettext_lazy("membership role", "Member"),
                "viewer": pgettext_lazy("membership role", "Viewer"),
            },
        ),
        "tokens_revoked": (_("Tokens revoked"), None),
    },
}
# How people number requests, allocations and plans, P-13. The tables count from 1, so a bare "#13"
# named different things; the letter says which, on every page, email and audit line.
NUMBER_PREFIXES = {"capacityrequest": "R-", "allocation": "A-", "capacityplan": "P-"}


def number(target_type: str, target_id) -> str:
    return f"{NUMBER_PREFIXES.get(target_type, '#')}{target_id}"


class Numbered:
    """A model people name by its number (`number`: R-13 for a capacity request, A-13 for an allocation, P-13 for a
    capacity plan)."""

    @property
    def number(self) -> str:
        return number(self._meta.model_name, self.pk)


def register(
    *,
    actions: dict | None = None,
    pages: dict[str, str] | None = None,
    readers: dict[str, Callable] | None = None,
    details: dict[str, dict] | None = None,
) -> None:
    ACTIONS.update(actions or {})
    PAGES.update(pages or {})
    READERS.update(readers or {})
    DETAILS.update(details or {})


def link(events, user) -> None:
    """Set `link` on each event: its object's page, or "" where there is none or `user` may not open it (asked
    once per type, not per event)."""
    closed = {target_type for target_type, may in READERS.items() if not may(user)}
    for event in events:
        event.link = "" if event.target_type in closed else event.target_url


def change_rows(target_type: str, changes: dict) -> list[tuple[str, object, object]]:
    """(label, before, after) per changed field, in the target model's words: "Instances: 4 → 6", "Status:
    Submitted → Approved"; a detail that is no field in its app's words (DETAILS: "Fairness rule: The most
    instance-hours only"). A name neither knows keeps its stored name."""
    model = target_model(target_type)
    details = DETAILS.get(target_type, {})
    rows = []
    for name, (before, after) in changes.items():
        try:
            field = model._meta.get_field(name) if model else None
        except FieldDoesNotExist:
            field = None
        if field is None:
            label, words = details.get(name, (name, None))
            rows.append((label, detail_in_words(words, before), detail_in_words(words, after)))
        else:
            rows.append((capfirst(field.verbose_name), in_words(field, before), in_words(field, after)))
    return rows


def in_words(field, value):
    """A stored value as a person reads it: a choice's label, a count with thousands separators."""
    if field.choices:
        return dict(field.flatchoices).get(value, value)
    if isinstance(field, models.IntegerField) and isinstance(value, int):
        return number_format(value, force_grouping=True)
    return value


def detail_in_words(words: dict | None, value):
    """A detail's stored value as a person reads it: its words if it has them, yes or no, a count."""
    if isinstance(value, bool):
        return _("yes") if value else _("no")
    if isinstance(value, int):
        return number_format(value, force_grouping=True)
    return (words or {}).get(value, value)


def target_model(target_type: str) -> type[models.Model] | None:
    """The model an audit event's object is of, in whichever app it lives; None if no app has it any more."""
    for config in apps.get_app_configs():
        try:
            return config.get_model(target_type)
        except LookupError:
            continue
    return None
