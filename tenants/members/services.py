"""An organization's members: invitations, roles, removal. Pages and API both call these; each checks who acts
through tenants.access (`can_manage_members`: the org's admins and program staff), refuses bad input with a
ValidationError naming the field, and records every change in the audit trail.

Removing a member or changing a role takes effect on the next request: access is read from the membership on
every request (tenants.access.get_org_access_or_404), for sessions and API tokens alike.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from portal.links import portal_url
from tenants.access import OrgAccess, get_org_access_or_404, is_program_staff
from tenants.audit import record_audit
from tenants.members.models import Invitation
from tenants.models import GrantSource, Membership, Organization
from tenants.service_accounts.models import is_service_account
from tenants.tokens.models import ApiToken
from tenants.tokens.services import revoke_token

logger = logging.getLogger("portal.members")

ROLES = dict(Membership.Role.choices)


def managing_access(user, organization: Organization) -> OrgAccess:
    """The caller's access to the org if it may manage its members (403 otherwise, 404 if not its org)."""
    access = get_org_access_or_404(user, organization.slug)
    access.require(
        access.can_manage_members and not is_service_account(user),
        _("Only the organization's admins manage its members."),
    )
    return access


def refuse_service_account(membership: Membership) -> None:
    """A service account's membership is changed on its own page (tenants.service_accounts), which keeps it member
    or viewer and disables rather than removes."""
    if is_service_account(membership.user):
        raise ValidationError(
            _("%(name)s is a service account: change or disable it on the Service accounts page.")
            % {"name": membership.user.get_username()},
            code="service_account",
        )


def clean_role(role: str) -> str:
    if role not in ROLES:
        raise ValidationError(
            {"role": _("No such role: %(role)s. Choose admin, member or viewer.") % {"role": role}}, code="role"
        )
    return role


def clean_email(email: str) -> str:
    email = (email or "").strip()
    try:
        validate_email(email)
    except ValidationError:
        raise ValidationError({"email": _("Enter a valid email address.")}, code="email") from None
    local, _at, domain = email.rpartition("@")
    return f"{local}@{domain.lower()}"


@transaction.atomic
def invite(*, user, organization: Organization, email: str, role: str) -> tuple[Invitation, str]:
    """A pending invitation and its link's key (emailed to the address; shown nowhere else)."""
    managing_access(user, organization)
    errors = {}
    try:
        email = clean_email(email)
    except ValidationError as error:
        errors |= error.message_dict
    try:
        clean_role(role)
    except ValidationError as error:
        errors |= error.message_dict
    if errors:
        raise ValidationError(errors)
    if organization.memberships.filter(user__email__iexact=email).exists():
        raise ValidationError({"email": _("%(email)s is already a member of this organization.") % {"email": email}})
    # Lock the organization's row: two admins inviting the same address at once make one invitation.
    Organization.objects.select_for_update().filter(pk=organization.pk).first()
    if Invitation.objects.for_org(organization).pending().filter(email__iexact=email).exists():
        raise ValidationError(
            {"email": _("An invitation to %(email)s is pending: revoke it to send a new one.") % {"email": email}}
        )
    now = timezone.now()
    invitation, key = Invitation.issue(
        organization=organization,
        email=email,
        role=role,
        invited_by=user,
        created_at=now,
        expires_at=now + timedelta(days=settings.INVITATION_DAYS),
    )
    invitation.save()
    record_audit(
        actor=user,
        organization=organization,
        action="member.invited",
        target=invitation,
        changes={"email": (None, email), "role": (None, role)},
    )
    _send_invitation(invitation, key)
    logger.info("Invitation %s to %s for %s as %s", invitation.prefix, email, organization.slug, role)
    return invitation, key


def invitation_url(key: str) -> str:
    return portal_url("invitation", key)


def _send_invitation(invitation: Invitation, key: str) -> None:
    organization = invitation.organization
    with translation.override(organization.language):
        subject = _("Invitation to %(org)s on the FM Program Portal") % {"org": organization.name}
        body = "\n\n".join(
            [
                _("%(who)s invites you to join %(org)s on the FM Program Portal as %(role)s.")
                % {
                    "who": invitation.invited_by.get_full_name() or invitation.invited_by.get_username(),
                    "org": organization.name,
                    "role": str(ROLES[invitation.role]).lower(),
                },
                _("Open this link to accept (it works once, until %(expires)s):")
                % {"expires": timezone.localtime(invitation.expires_at).strftime("%Y-%m-%d %H:%M %Z")},
                invitation_url(key),
                _("If you did not expect this invitation, ignore this email."),
            ]
        )
    recipients = [invitation.email]
    transaction.on_commit(lambda: send_mail(subject, body, settings.DEFAULT_FROM_EMAIL, recipients))


@transaction.atomic
def revoke_invitation(*, user, invitation: Invitation) -> Invitation:
    managing_access(user, invitation.organization)
    now = timezone.now()
    changed = Invitation.objects.filter(pk=invitation.pk, accepted_at__isnull=True, revoked_at__isnull=True).update(
        revoked_at=now, revoked_by=user
    )
    if not changed:
        raise ValidationError(_("This invitation was already accepted or revoked."), code="not_pending")
    invitation.refresh_from_db()
    record_audit(
        actor=user,
        organization=invitation.organization,
        action="member.invitation_revoked",
        target=invitation,
        changes={"email": (invitation.email, None)},
    )
    return invitation


def find_invitation(key: str) -> Invitation | None:
    """The invitation the link's key names, whatever its state (the accept page says why one is refused)."""
    return Invitation.find(key, Invitation.objects.select_related("organization", "invited_by"))


def email_matches(invitation: Invitation, user) -> bool:
    """Whether the invitation is addressed to the user's verified address. A local account's address is the one
    its invitation or an admin gave it; an address from institution sign-in is kept only when the provider
    verified it (tenants.sso.services.verified_email), and one it has since called unverified does not count."""
    email = (user.email or "").strip().lower()
    if not email or email != invitation.email.lower():
        return False
    return not user.oidc_identities.filter(email__iexact=email, email_verified=False).exists()


@transaction.atomic
def accept_invitation(*, key: str, user) -> Membership:
    """Puts the signed-in `user` into the invitation's organization with its role, once: the invitation must be
    pending and addressed to the user's verified email. Used by the accept page; a sign-in with a provider that
    starts from an invitation link joins through `join` in the same way (tenants.sso.services)."""
    invitation = find_invitation(key)
    if invitation is None:
        raise ValidationError(_("This invitation link is not valid."), code="unknown")
    invitation = Invitation.objects.select_for_update().select_related("organization").get(pk=invitation.pk)
    if invitation.state != "active":
        raise ValidationError(invitation_refusal(invitation), code=invitation.state)
    if not email_matches(invitation, user):
        raise ValidationError(
            _("This invitation is for %(email)s: sign in with that address to accept it.")
            % {"email": invitation.email},
            code="wrong_person",
        )
    return join(invitation=invitation, user=user)


def join(*, invitation: Invitation, user) -> Membership:
    """The membership the invitation grants (its caller holds the invitation's row locked and checked it): its
    role, granted in the portal (`local`), which sign-in's groups never lower or remove afterwards. A membership
    the person already had from their groups becomes the invitation's."""
    organization = invitation.organization
    membership, created = Membership.objects.select_for_update().get_or_create(
        user=user, organization=organization, defaults={"role": invitation.role, "source": GrantSource.LOCAL}
    )
    before = None if created else membership.role
    if not created and (membership.role, membership.source) != (invitation.role, GrantSource.LOCAL):
        membership.role, membership.source = invitation.role, GrantSource.LOCAL
        membership.save(update_fields=["role", "source"])
    Invitation.objects.filter(pk=invitation.pk).update(accepted_at=timezone.now(), accepted_by=user)
    record_audit(
        actor=user,
        organization=organization,
        action="member.joined",
        target=membership,
        changes={"user": (None, user.get_username()), "role": (before, membership.role)},
        comment=invitation.email,
    )
    return membership


def invitation_refusal(invitation: Invitation) -> str:
    return {
        "accepted": _("This invitation was already used: it works only once."),
        "revoked": _("This invitation was revoked by the organization."),
        "expired": _("This invitation has expired. Ask the organization's admins for a new one."),
    }.get(invitation.state, "")


@transaction.atomic
def create_local_account(*, key: str, username: str, password: str, first_name: str = "", last_name: str = ""):
    """A new local account for the invitee (where local passwords are enabled), joined to the organization."""
    if not settings.LOCAL_PASSWORD_LOGIN:
        raise ValidationError(_("This portal signs people in through their institution only."), code="no_passwords")
    invitation = find_invitation(key)
    if invitation is None or invitation.state != "active":
        raise ValidationError(invitation_refusal(invitation) if invitation else _("This invitation link is not valid."))
    users = get_user_model()
    if users.objects.filter(email__iexact=invitation.email).exists():
        raise ValidationError(_("An account with this email exists: sign in to accept the invitation."))
    if users.objects.filter(username__iexact=username).exists():
        raise ValidationError({"username": _("This username is taken.")})
    try:
        with transaction.atomic():
            user = users.objects.create_user(
                username=username, email=invitation.email, password=password, first_name=first_name, last_name=last_name
            )
    except IntegrityError:
        raise ValidationError({"username": _("This username is taken.")}) from None
    accept_invitation(key=key, user=user)
    return user


def _locked_admins(organization: Organization) -> list[int]:
    return list(
        Membership.objects.select_for_update()
        .filter(organization=organization, role=Membership.Role.ADMIN)
        .values_list("pk", flat=True)
    )


@transaction.atomic
def change_role(*, user, membership: Membership, role: str) -> Membership:
    managing_access(user, membership.organization)
    clean_role(role)
    admins = _locked_admins(membership.organization)
    membership = Membership.objects.select_for_update().select_related("user", "organization").get(pk=membership.pk)
    refuse_service_account(membership)
    before = membership.role
    if before == role and membership.source == GrantSource.LOCAL:
        return membership
    if before == Membership.Role.ADMIN and admins == [membership.pk]:
        raise ValidationError(
            {"role": _("%(name)s is the organization's last admin: make someone else admin first.")
             % {"name": membership.user.get_username()}},
            code="last_admin",
        )  # fmt: skip
    # The admin's choice: sign-in's groups no longer change or remove it (tenants.sso.services).
    source_before = membership.source
    membership.role, membership.source = role, GrantSource.LOCAL
    membership.save(update_fields=["role", "source"])
    record_audit(
        actor=user,
        organization=membership.organization,
        action="member.role_changed",
        target=membership,
        changes={"role": (before, role)} | ({"source": (source_before, "local")} if source_before != "local" else {}),
        comment=membership.user.get_username(),
    )
    return membership


@transaction.atomic
def remove_member(*, user, membership: Membership) -> None:
    """Removes the person from the organization. Their records (requests, cases, workloads, audit) stay under
    their name. Their API tokens are revoked if no organization is left to them; otherwise the tokens keep
    working for the other organizations only (access is checked on every request)."""
    managing_access(user, membership.organization)
    admins = _locked_admins(membership.organization)
    membership = Membership.objects.select_for_update().select_related("user", "organization").get(pk=membership.pk)
    refuse_service_account(membership)
    if admins == [membership.pk]:
        raise ValidationError(
            _("%(name)s is the organization's last admin: make someone else admin first.")
            % {"name": membership.user.get_username()},
            code="last_admin",
        )
    person, organization, role = membership.user, membership.organization, membership.role
    record_audit(
        actor=user,
        organization=organization,
        action="member.removed",
        target=membership,
        changes={"role": (role, None)},
        comment=person.get_username(),
    )
    membership.delete()
    if not Membership.objects.filter(user=person).exists() and not is_program_staff(person):
        for token in ApiToken.objects.for_user(person).active():
            revoke_token(token=token, by=user)
    logger.info("Member %s removed from %s by %s", person.get_username(), organization.slug, user.get_username())
