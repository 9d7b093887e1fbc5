"""Provisioning and deprovisioning: the writes a SCIM client's requests make, each in one transaction.

Deactivation (active=false, or DELETE) takes effect at once: the account is inactive (no sign-in, by password or
institution), every API token of it is revoked, every session of it is deleted, and each of its organizations'
audit trails records it. Nothing the person made is deleted, nor their memberships. DELETE deactivates and unlinks
(the SCIM id is gone, the person leaves every SCIM group, and so the grants those made): the Django user stays, as
the author of their records. Reactivation (active=true) lets them sign in again; revoked tokens stay revoked.
"""

from __future__ import annotations

import logging
import uuid
from importlib import import_module

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.sessions.models import Session
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from scim2_models import Context

from tenants.audit import record_audit
from tenants.models import Membership
from tenants.scim import schema
from tenants.scim.grants import sync_grants
from tenants.scim.models import ScimGroup, ScimUser
from tenants.sso import sessions
from tenants.tokens.models import ApiToken
from tenants.tokens.services import revoke_token

logger = logging.getLogger("portal.scim")


def _taken(username: str, *, other_than=None) -> ValidationError | None:
    """Refusal of a userName another account has, without regard to case (the portal's usernames are labels people
    read: "BJensen" and "bjensen" would be two people no one can tell apart)."""
    others = get_user_model().objects.filter(username__iexact=username)
    if other_than is not None:
        others = others.exclude(pk=other_than.pk)
    if others.exists():
        return ValidationError(_("The userName %(name)s is taken.") % {"name": username}, code="uniqueness")
    return None


def _clean_username(value: str | None) -> str:
    username = (value or "").strip()
    field = get_user_model()._meta.get_field("username")
    try:
        field.run_validators(username)
        if not username:
            raise ValidationError("empty")
    except ValidationError:
        raise ValidationError(
            _("userName must be 1 to 150 letters, digits and @ . + - _ characters."), code="invalid_value"
        ) from None
    return username


@transaction.atomic
def create_user(*, data: schema.User, comment: str) -> ScimUser:
    """A new account, or an existing one that SCIM does not manage yet, taken over by its userName (a person who
    signed in through their institution before the client was set up). Superusers and Django staff accounts (the
    break-glass ones) are never taken over."""
    username = _clean_username(data.user_name)
    User = get_user_model()
    existing = User.objects.select_for_update().filter(username__iexact=username).first()
    if existing is not None and (existing.is_superuser or existing.is_staff or hasattr(existing, "scim")):
        raise _taken(username)
    if existing is None:
        user = User(username=username)
        user.set_unusable_password()  # signs in through the institution; scripts use API tokens
        user.save()
    else:
        user = existing
        logger.info("SCIM took over the existing account %s", user.get_username())
    scim_user = ScimUser.objects.create(user=user)
    return write_user(scim_user=scim_user, data=data, comment=comment)


@transaction.atomic
def write_user(*, scim_user: ScimUser, data: schema.User, comment: str) -> ScimUser:
    """Makes the account what `data` says (a full replacement, PUT's; PATCH writes its patched resource here)."""
    scim_user = ScimUser.objects.select_for_update().select_related("user").get(pk=scim_user.pk)
    user = scim_user.user
    username = _clean_username(data.user_name)
    if refusal := _taken(username, other_than=user):
        raise refusal
    emails = [email.model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE) for email in data.emails or []]
    primary = next((e["value"] for e in emails if e.get("primary")), emails[0].get("value") if emails else "")
    user.username = username
    user.first_name = (data.name.given_name or "") if data.name else ""
    user.last_name = (data.name.family_name or "") if data.name else ""
    user.email = primary or ""
    user.save(update_fields=["username", "first_name", "last_name", "email"])
    scim_user.external_id = data.external_id or ""
    scim_user.display_name = data.display_name or ""
    scim_user.emails = emails
    scim_user.updated_at = timezone.now()
    scim_user.save()
    if data.active is False and user.is_active:
        deactivate(user=user, comment=comment)
    elif data.active is True and not user.is_active:
        reactivate(user=user, comment=comment)
    return scim_user


def end_sessions(user) -> int:
    """Ends every session of `user`; the number ended. Those noted at sign-in (tenants.sso.sessions) first, found
    by the user; with the database engine, any older one too, read from the session table (sessions made before
    sign-ins were noted). An inactive account is refused by every authentication backend on its next request all
    the same."""
    ended = sessions.end_all(user)
    if not settings.SESSION_ENGINE.endswith(("db", "cached_db")):
        return ended
    engine = import_module(settings.SESSION_ENGINE)
    for session in Session.objects.filter(expire_date__gt=timezone.now()).iterator():
        if session.get_decoded().get("_auth_user_id") == str(user.pk):
            engine.SessionStore(session_key=session.session_key).delete()  # a cached copy too
            ended += 1
    return ended


@transaction.atomic
def deactivate(*, user, comment: str) -> None:
    get_user_model().objects.filter(pk=user.pk).update(is_active=False)
    user.is_active = False
    tokens = list(ApiToken.objects.for_user(user).active().select_related("user"))
    for token in tokens:
        revoke_token(token=token, by=None)
    ended = end_sessions(user)
    note = f"{comment}; {len(tokens)} API token(s) revoked, {ended} session(s) ended"
    for membership in Membership.objects.filter(user=user).select_related("organization"):
        record_audit(actor=None, organization=membership.organization, action="scim.user_deactivated",
                     target=membership, changes={"active": (True, False)}, comment=note)  # fmt: skip
    logger.info("SCIM deactivated %s: %s", user.get_username(), note)


@transaction.atomic
def reactivate(*, user, comment: str) -> None:
    get_user_model().objects.filter(pk=user.pk).update(is_active=True)
    user.is_active = True
    for membership in Membership.objects.filter(user=user).select_related("organization"):
        record_audit(actor=None, organization=membership.organization, action="scim.user_reactivated",
                     target=membership, changes={"active": (False, True)}, comment=comment)  # fmt: skip
    logger.info("SCIM reactivated %s (%s)", user.get_username(), comment)


@transaction.atomic
def delete_user(*, scim_user: ScimUser, comment: str) -> None:
    """Deactivates and unlinks; the Django user and everything they made stay."""
    scim_user = ScimUser.objects.select_for_update().select_related("user").get(pk=scim_user.pk)
    user = scim_user.user
    if user.is_active:
        deactivate(user=user, comment=comment)
    user.scim_groups.clear()
    sync_grants(user=user, comment=comment, keep_last_admin=True)
    scim_user.delete()
    logger.info("SCIM deleted (deactivated and unlinked) %s", user.get_username())


def _member_user_ids(data: schema.Group) -> list[int]:
    wanted = []
    for member in data.members or []:
        try:
            wanted.append(uuid.UUID(str(member.value)))
        except ValueError:
            raise ValidationError(
                _("No user has the SCIM id %(id)s.") % {"id": member.value}, code="invalid_value"
            ) from None
    found = dict(ScimUser.objects.filter(scim_id__in=wanted).values_list("scim_id", "user_id"))
    if missing := [str(scim_id) for scim_id in wanted if scim_id not in found]:
        raise ValidationError(_("No user has the SCIM id %(id)s.") % {"id": missing[0]}, code="invalid_value")
    return sorted(set(found.values()))


@transaction.atomic
def save_group(*, group: ScimGroup | None, data: schema.Group, comment: str) -> ScimGroup:
    """Creates or replaces a group, then brings the grants of everyone it gained, lost or (renamed) has in line.
    A change that would leave an organization without its last admin raises ValidationError ("last_admin")."""
    name = (data.display_name or "").strip()
    if not name:
        raise ValidationError(_("A group needs a displayName."), code="invalid_value")
    members = _member_user_ids(data)
    if group is None:
        group, before, renamed = ScimGroup(), set(), True
    else:
        group = ScimGroup.objects.select_for_update().get(pk=group.pk)
        before = set(group.members.values_list("pk", flat=True))
        renamed = group.display_name != name
    group.display_name, group.external_id = name, data.external_id or ""
    group.updated_at = timezone.now()
    group.save()
    group.members.set(members)
    affected = (before | set(members)) if renamed else (before ^ set(members))
    _sync(affected, comment=f"{comment}, group {name}")
    return group


@transaction.atomic
def delete_group(*, group: ScimGroup, comment: str) -> None:
    group = ScimGroup.objects.select_for_update().get(pk=group.pk)
    members = set(group.members.values_list("pk", flat=True))
    name = group.display_name
    group.delete()
    _sync(members, comment=f"{comment}, group {name} deleted")


def _sync(user_ids: set[int], *, comment: str) -> None:
    for user in get_user_model().objects.filter(pk__in=user_ids).order_by("pk"):
        sync_grants(user=user, comment=comment)
