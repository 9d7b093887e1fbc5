"""The Members page of an organization (everyone in the org reads it; its admins and program staff invite, change
roles and remove), and the page an invitation link opens."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model, login
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from portal.forms import apply_errors
from portal.tables import sort_table
from tenants.access import get_org_access_or_404
from tenants.members import services
from tenants.members.forms import AccountForm, InviteForm, RoleForm
from tenants.members.models import Invitation
from tenants.members.tables import MemberTable
from tenants.models import Membership
from tenants.service_accounts.models import ServiceAccount, people
from tenants.sso import flow, providers

PAGE_SIZE = 50
TEMPLATE = "tenants/members/member_list.html"


def _page(request, access, *, invite_form=None, status=200):
    org = access.organization
    memberships = people(org.memberships).select_related("user")
    table = sort_table(request, MemberTable(memberships, order_by="username"), per_page=PAGE_SIZE)
    manage = access.can_manage_members
    context = {
        "access": access,
        "org": org,
        "table": table,
        "page": table.page,
        "can_manage": manage,
        "roles": Membership.Role.choices,
        "invitations": Invitation.objects.for_org(org).pending().select_related("invited_by") if manage else [],
        "invite_form": invite_form or InviteForm(),
        "invitation_days": settings.INVITATION_DAYS,
        "service_accounts": ServiceAccount.objects.for_org(org).enabled().count(),
    }
    return render(request, TEMPLATE, context, status=status)


@login_required
@require_safe
def member_list(request, org_slug: str):
    return _page(request, get_org_access_or_404(request.user, org_slug))


@login_required
@require_POST
def member_invite(request, org_slug: str):
    access = _managing(request, org_slug)
    form = InviteForm(request.POST)
    if form.is_valid():
        try:
            invitation, _key = services.invite(user=request.user, organization=access.organization, **form.cleaned_data)
        except ValidationError as error:
            apply_errors(form, error)
        else:
            messages.success(request, _("Invitation sent to %(email)s.") % {"email": invitation.email})
            return redirect("members:list", org_slug=access.organization.slug)
    return _page(request, access, invite_form=form, status=400)


def _managing(request, org_slug: str, obj=None):
    """The caller's access if it manages the org's members: 404 for another org, 403 for a member or viewer.
    An object of the org, named by the URL, is looked up (404) first: `obj(access)` returns it."""
    access = get_org_access_or_404(request.user, org_slug)
    found = obj(access) if obj is not None else None
    access.require(access.can_manage_members, _("Only the organization's admins manage its members."))
    return access if obj is None else (access, found)


def _membership(access, pk: int) -> Membership:
    return get_object_or_404(people(access.organization.memberships).select_related("user", "organization"), pk=pk)


@login_required
@require_POST
def member_role(request, org_slug: str, pk: int):
    access, membership = _managing(request, org_slug, lambda access: _membership(access, pk))
    form = RoleForm(request.POST)
    try:
        if not form.is_valid():
            raise ValidationError(_("No such role. Choose admin, member or viewer."))
        services.change_role(user=request.user, membership=membership, role=form.cleaned_data["role"])
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
        return _page(request, access, status=400)
    messages.success(
        request,
        _("%(name)s is now %(role)s.")
        % {"name": membership.user.get_username(), "role": str(services.ROLES[form.cleaned_data["role"]]).lower()},
    )
    return redirect(reverse("members:list", args=[access.organization.slug]) + f"#member-{membership.pk}")


member_role.tenant_model = Membership


@login_required
@require_http_methods(["GET", "POST"])
def member_remove(request, org_slug: str, pk: int):
    """GET: what removing does, and a button; POST: remove."""
    access, membership = _managing(request, org_slug, lambda access: _membership(access, pk))
    error = None
    if request.method == "POST":
        try:
            services.remove_member(user=request.user, membership=membership)
        except ValidationError as refused:
            error = " ".join(refused.messages)
        else:
            messages.success(
                request,
                _("%(name)s was removed from %(org)s.")
                % {"name": membership.user.get_username(), "org": access.organization.name},
            )
            if membership.user == request.user and not access.is_staff:
                return redirect("home")
            return redirect("members:list", org_slug=access.organization.slug)
    context = {"access": access, "org": access.organization, "membership": membership, "error": error}
    return render(request, "tenants/members/member_remove.html", context, status=400 if error else 200)


member_remove.tenant_model = Membership


@login_required
@require_POST
def invitation_revoke(request, org_slug: str, pk: int):
    access, invitation = _managing(
        request, org_slug, lambda access: get_object_or_404(Invitation.objects.for_org(access.organization), pk=pk)
    )
    try:
        services.revoke_invitation(user=request.user, invitation=invitation)
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    else:
        messages.success(request, _("The invitation to %(email)s was revoked.") % {"email": invitation.email})
    return redirect("members:list", org_slug=access.organization.slug)


invitation_revoke.tenant_model = Invitation


@never_cache
@require_http_methods(["GET", "POST"])
def accept(request, key: str):
    """The page an invitation link opens. A used, revoked, expired or unknown link explains itself and does
    nothing. Signed in with the invited address: a button joins the organization. Signed out: sign in (with a
    password, or by SSO, which returns here), or create a local account where local passwords are enabled."""
    invitation = services.find_invitation(key)
    if invitation is None or invitation.state != "active":
        message = services.invitation_refusal(invitation) if invitation else _("This invitation link is not valid.")
        return render(
            request, "tenants/members/invitation_gone.html", {"message": message}, status=410 if invitation else 404
        )
    context = {
        "invitation": invitation,
        "org": invitation.organization,
        "login_url": f"{reverse('login')}?{urlencode({'next': request.path})}",
        # Signing in with a provider from here joins: the sign-in finds the invitation in the session.
        "sign_in_buttons": [(p.name, p.login_url(request.path)) for p in providers.all()],
        "password_login": settings.LOCAL_PASSWORD_LOGIN,
    }
    if request.user.is_authenticated:
        if not services.email_matches(invitation, request.user):
            return render(request, "tenants/members/invitation.html", {**context, "wrong_person": True}, status=403)
        if request.method == "POST":
            try:
                services.accept_invitation(key=key, user=request.user)
            except ValidationError as error:  # used or revoked since the page was shown
                context = {"message": " ".join(error.messages)}
                return render(request, "tenants/members/invitation_gone.html", context, status=410)
            messages.success(
                request,
                _("Welcome to %(org)s: you joined as %(role)s.")
                % {"org": invitation.organization.name, "role": invitation.get_role_display().lower()},
            )
            return redirect("org-home", org_slug=invitation.organization.slug)
        return render(request, "tenants/members/invitation.html", context)
    # A sign-in with an institution that starts from here joins the organization (tenants.sso.flow).
    flow.remember_invitation(request, key)
    has_account = get_user_model().objects.filter(email__iexact=invitation.email).exists()
    can_create = settings.LOCAL_PASSWORD_LOGIN and not has_account
    form = AccountForm(request.POST or None, email=invitation.email) if can_create else None
    if request.method == "POST":
        if form is None:
            return render(request, "tenants/members/invitation.html", context, status=400)
        if form.is_valid():
            try:
                user = services.create_local_account(
                    key=key,
                    username=form.cleaned_data["username"],
                    password=form.cleaned_data["password1"],
                    first_name=form.cleaned_data["first_name"],
                    last_name=form.cleaned_data["last_name"],
                )
            except ValidationError as error:
                apply_errors(form, error)
            else:
                login(request, user, backend="tenants.logins.backends.LocalPasswordBackend")
                messages.success(
                    request,
                    _("Welcome to %(org)s: you joined as %(role)s.")
                    % {"org": invitation.organization.name, "role": invitation.get_role_display().lower()},
                )
                return redirect("org-home", org_slug=invitation.organization.slug)
        return render(request, "tenants/members/invitation.html", {**context, "form": form}, status=400)
    return render(request, "tenants/members/invitation.html", {**context, "form": form, "has_account": has_account})
