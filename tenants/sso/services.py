"""Signing a person in from the provider's verified claims: find them by issuer and subject (or create them), then
make their memberships and staff role those their groups grant. Grants made in the portal are never touched."""

from __future__ import annotations

import hashlib
import logging
import re

from django.contrib.admin.models import ADDITION, CHANGE, DELETION, LogEntry
from django.contrib.auth import get_user_model
from django.contrib.contenttypes.models import ContentType
from django.db import IntegrityError, transaction
from django.utils import timezone

from tenants.audit import record_audit
from tenants.members.models import Invitation
from tenants.members.services import join
from tenants.models import GrantSource, Membership, Organization, StaffRole
from tenants.service_accounts.models import USERNAME_PREFIX as SERVICE_ACCOUNT_PREFIX
from tenants.service_accounts.models import is_service_account
from tenants.sso.mapping import Placement, place
from tenants.sso.models import OidcIdentity
from tenants.sso.providers import CLAIMS, Provider

logger = logging.getLogger("portal.sso")
MAX_ID = 1024  # OidcIdentity's issuer and subject: SAML entity ids and persistent NameIDs run long


class SignInRefused(Exception):
    """The sign-in cannot go on; `reason` says why to the log (the page says it to the person)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class NotPlaced(SignInRefused):
    """The person is who they say, but no group of theirs (and no grant in the portal) gives them anything here."""

    def __init__(self, *, placement: Placement, email: str, invitation: Invitation | None = None):
        super().__init__("no organization or staff role for this person")
        self.placement = placement
        self.email = email
        self.invitation = invitation  # the invitation they came from, when it is not theirs to accept


class AccountDisabled(SignInRefused):
    def __init__(self):
        super().__init__("the portal account is deactivated")


class EmailTaken(SignInRefused):
    """A first sign-in whose verified address is already an account's: the same person, most likely, whom the
    program team links (Django admin, institution sign-in identities), rather than a second account made."""

    def __init__(self, email: str):
        super().__init__(f"{email} is the address of an existing account")
        self.email = email


def normalize(provider: Provider, claims: dict) -> dict:
    """The provider's claims under the portal's names (the provider's `claims` mapping), with `email_verified` a
    bool: True only when the provider said so, or said nothing and is trusted for addresses (`trust_email`)."""
    found = dict(claims)
    for name in CLAIMS:
        if provider.claim(name) != name:
            found[name] = claims.get(provider.claim(name))
    said = found.get("email_verified")
    if isinstance(said, str):  # some providers send "true"/"false"
        said = {"true": True, "false": False}.get(said.lower())
    found["email_verified"] = bool(found.get("email")) and (said is True or (said is None and provider.trust_email))
    return found


def sign_in(*, provider: Provider, claims: dict, invitation: Invitation | None = None):
    """The user for these verified claims (`iss` and `sub`: the ID token's, or the SAML identity provider's entity
    id and the person's persistent identifier), created at their first sign-in, their grants from groups brought
    in line with the claims. With `invitation` (the link the person came from), its organization is joined when
    the invitation is pending and addressed to the person's verified email: the invitation is the permission to
    join. Returns (user, membership joined or None). NotPlaced when the person has nothing here."""
    claims = normalize(provider, claims)
    if not (0 < len(str(claims.get("iss") or "")) <= MAX_ID and 0 < len(str(claims.get("sub") or "")) <= MAX_ID):
        raise SignInRefused(f"an issuer and a subject of 1 to {MAX_ID} characters are needed")
    placement = place(claims, provider)
    try:
        user, joined = _sign_in(claims=claims, placement=placement, invitation=invitation)
    except IntegrityError:  # a first sign-in of the same person in two tabs at once: the other one created it
        user, joined = _sign_in(claims=claims, placement=placement, invitation=invitation)
    if not (user.memberships.exists() or StaffRole.objects.filter(user=user).exists()):
        raise NotPlaced(placement=placement, email=claims.get("email") or "", invitation=invitation)
    return user, joined


def verified_email(claims: dict) -> str:
    """The address the provider vouches for, or "" (an unverified one is never matched nor kept)."""
    return (claims.get("email") or "")[:254] if claims.get("email_verified") else ""


def _invitation_for(invitation: Invitation | None, email: str) -> Invitation | None:
    """The invitation, locked, when it is pending and addressed to `email` (a verified address)."""
    if invitation is None or not email:
        return None
    invitation = Invitation.objects.select_for_update().select_related("organization").get(pk=invitation.pk)
    if invitation.state != "active" or invitation.email.lower() != email.lower():
        return None
    return invitation


@transaction.atomic
def _sign_in(*, claims: dict, placement: Placement, invitation: Invitation | None):
    issuer, subject = claims["iss"], claims["sub"]
    organizations = {
        org.slug: org for org in Organization.objects.filter(slug__in=placement.organizations).order_by("slug")
    }
    for slug in sorted(set(placement.organizations) - set(organizations)):
        logger.warning("Groups of %s @ %s name organization %r, which does not exist: ignored", subject, issuer, slug)
    identity = (
        OidcIdentity.objects.select_for_update().select_related("user").filter(issuer=issuer, subject=subject).first()
    )
    email = verified_email(claims)
    opened, invitation = invitation, _invitation_for(invitation, email)
    if identity is None:
        if not organizations and placement.staff_role is None and invitation is None:
            # Nothing to give: no account is made for someone the program has not placed nor invited (the
            # invitation they opened, if any, is not theirs to accept: its page says so).
            raise NotPlaced(placement=placement, email=claims.get("email") or "", invitation=opened)
        if email and get_user_model().objects.filter(email__iexact=email).exists():
            raise EmailTaken(email)
        with transaction.atomic():
            user = _new_user(claims, email)
            identity = OidcIdentity.objects.create(user=user, issuer=issuer, subject=subject)
        logger.info("First sign-in of %s @ %s: user %s created", subject, issuer, user.username)
    user = identity.user
    if not user.is_active:
        raise AccountDisabled()
    if is_service_account(user):  # linked by hand in admin: a machine user never signs in with a provider
        raise SignInRefused(f"{user.get_username()} is a service account")
    _update_profile(user, claims, email)
    identity.email, identity.email_verified = (claims.get("email") or "")[:254], bool(email)
    identity.last_login = timezone.now()
    identity.save(update_fields=["email", "email_verified", "last_login"])
    comment = f"{issuer} groups: {', '.join(placement.groups) or '—'}"
    _sync_memberships(
        user=user,
        wanted={organizations[s]: r for s, r in placement.organizations.items() if s in organizations},
        comment=comment,
    )
    sync_staff_role(user=user, wanted=placement.staff_role, source=GrantSource.SSO, via="at sign-in", comment=comment)
    joined = join(invitation=invitation, user=user) if invitation is not None else None
    return user, joined


def _new_user(claims: dict, email: str):
    User = get_user_model()
    user = User(username=_free_username(claims), email=email)
    user.set_unusable_password()  # signs in through the provider only; scripts use API tokens
    _names(user, claims)
    user.save()
    return user


def _free_username(claims: dict) -> str:
    """A readable username no one has: the provider's preferred one, else the email's local part, else one made
    from the subject; with -2, -3… on a clash. It is a label: sign-in never looks people up by it."""
    User = get_user_model()
    hint = claims.get("preferred_username") or (claims.get("email") or "").split("@")[0]
    base = re.sub(r"[^\w.@+-]", "", str(hint))[:140]
    if not base:
        base = "user-" + hashlib.sha256(f"{claims['iss']} {claims['sub']}".encode()).hexdigest()[:10]
    if base.lower().startswith(SERVICE_ACCOUNT_PREFIX):  # reserved for service accounts
        base = f"user-{base}"
    taken = set(User.objects.filter(username__istartswith=base).values_list("username", flat=True))
    taken = {name.lower() for name in taken}
    candidate, n = base, 1
    while candidate.lower() in taken:
        n += 1
        candidate = f"{base}-{n}"
    return candidate


def _names(user, claims: dict) -> None:
    given, family = claims.get("given_name"), claims.get("family_name")
    if not (given or family) and claims.get("name"):
        given = claims["name"]
    user.first_name, user.last_name = str(given or "")[:150], str(family or "")[:150]


def _update_profile(user, claims: dict, email: str) -> None:
    """Names as the provider sends them; the address only when verified (an unverified one is not kept)."""
    before = (user.email, user.first_name, user.last_name)
    if email:
        user.email = email
    _names(user, claims)
    if (user.email, user.first_name, user.last_name) != before:
        user.save(update_fields=["email", "first_name", "last_name"])


def _sync_memberships(*, user, wanted: dict[Organization, str], comment: str) -> None:
    """Grant, change and remove the memberships that sign-in granted, each in the organization's audit trail."""
    current = {m.organization_id: m for m in Membership.objects.select_for_update().filter(user=user)}
    for org, role in wanted.items():
        membership = current.get(org.pk)
        if membership is None:
            membership = Membership.objects.create(user=user, organization=org, role=role, source=GrantSource.SSO)
            record_audit(actor=user, organization=org, action="sso.membership_granted", target=membership,
                         changes={"role": [None, role]}, comment=comment)  # fmt: skip
        elif membership.source == GrantSource.SSO and membership.role != role:
            before, membership.role = membership.role, role
            membership.save(update_fields=["role"])
            record_audit(actor=user, organization=org, action="sso.role_changed", target=membership,
                         changes={"role": [before, role]}, comment=comment)  # fmt: skip
    wanted_ids = {org.pk for org in wanted}
    for membership in current.values():
        if membership.source == GrantSource.SSO and membership.organization_id not in wanted_ids:
            record_audit(actor=user, organization=membership.organization, action="sso.membership_removed",
                         target=membership, changes={"role": [membership.role, None]}, comment=comment)  # fmt: skip
            membership.delete()


def sync_staff_role(*, user, wanted: str | None, source: str, via: str, comment: str) -> None:
    """The program staff role as an outside source's groups grant it (`source`: sign-in's, SCIM's; `via`: "at
    sign-in", "through SCIM"), changing only a role that source granted. Recorded in Django admin's history of the
    staff role (where staff roles are granted by hand), since the audit trail belongs to organizations."""
    staff = StaffRole.objects.select_for_update().filter(user=user).first()
    if staff is not None and staff.source != source:
        return
    if staff is None and wanted is not None:
        staff = StaffRole.objects.create(user=user, role=wanted, source=source)
        _log_staff(user, staff, ADDITION, f"Granted {wanted} {via} ({comment})")
    elif staff is not None and wanted is None:
        _log_staff(user, staff, DELETION, f"Removed {staff.role} {via} ({comment})")
        staff.delete()
    elif staff is not None and staff.role != wanted:
        _log_staff(user, staff, CHANGE, f"Changed {staff.role} to {wanted} {via} ({comment})")
        staff.role = wanted
        staff.save(update_fields=["role"])


def _log_staff(user, staff: StaffRole, flag: int, message: str) -> None:
    LogEntry.objects.create(
        user=user,
        content_type=ContentType.objects.get_for_model(StaffRole),
        object_id=str(staff.pk),
        object_repr=str(staff)[:200],
        action_flag=flag,
        change_message=message,
    )
    logger.info("Staff role of %s: %s", user.get_username(), message)
