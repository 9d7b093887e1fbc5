"""The Service accounts pages of an organization: everyone in the org reads them (never a key); its admins and
program staff create accounts, change their role, make and revoke their tokens, disable and enable them."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from portal.forms import apply_errors
from tenants.access import OrgAccess, get_org_access_or_404
from tenants.logins.lockout import client_address
from tenants.service_accounts import services
from tenants.service_accounts.forms import ServiceAccountChangeForm, ServiceAccountForm
from tenants.service_accounts.models import ServiceAccount
from tenants.tokens import services as token_rules
from tenants.tokens.forms import TokenForm
from tenants.tokens.models import ApiToken

LIST_TEMPLATE = "tenants/service_accounts/list.html"
DETAIL_TEMPLATE = "tenants/service_accounts/detail.html"


def _accounts(access: OrgAccess):
    return ServiceAccount.objects.for_org(access.organization).with_details()


def _account(access: OrgAccess, pk: int) -> ServiceAccount:
    return get_object_or_404(_accounts(access), pk=pk)


def _managing(request, org_slug: str, pk: int | None = None):
    """The caller's access if it manages the org's service accounts: 404 for another org (or another org's
    account, looked up first), 403 for a member or viewer."""
    access = get_org_access_or_404(request.user, org_slug)
    account = _account(access, pk) if pk is not None else None
    access.require(access.can_manage_service_accounts, _("Only the organization's admins manage its service accounts."))
    return access, account


def _list_page(request, access: OrgAccess, *, form=None, status=200):
    context = {
        "access": access,
        "org": access.organization,
        "accounts": _accounts(access).order_by("name"),
        "can_manage": access.can_manage_service_accounts,
        "form": form or ServiceAccountForm(),
    }
    return render(request, LIST_TEMPLATE, context, status=status)


@login_required
@require_safe
def account_list(request, org_slug: str):
    return _list_page(request, get_org_access_or_404(request.user, org_slug))


@login_required
@require_POST
def account_create(request, org_slug: str):
    access, _none = _managing(request, org_slug)
    form = ServiceAccountForm(request.POST)
    if form.is_valid():
        try:
            account = services.create_service_account(
                user=request.user, organization=access.organization, **form.cleaned_data
            )
        except ValidationError as error:
            apply_errors(form, error)
        else:
            messages.success(
                request,
                _("Service account %(name)s created. Create a token for its scripts below.")
                % {"name": account.username},
            )
            return redirect("service_accounts:detail", org_slug=access.organization.slug, pk=account.pk)
    return _list_page(request, access, form=form, status=400)


def _detail_page(request, access: OrgAccess, account: ServiceAccount, *, status=200, **forms):
    manage = access.can_manage_service_accounts
    context = {
        "access": access,
        "org": access.organization,
        "account": account,
        "tokens": services.tokens_of(account),
        "can_manage": manage,
        "token_form": forms.get("token_form") or TokenForm(),
        "change_form": forms.get("change_form")
        or ServiceAccountChangeForm(initial={"role": account.role, "description": account.description}),
        "new": forms.get("new"),
        "max_days": token_rules.MAX_DAYS,
    }
    return render(request, DETAIL_TEMPLATE, context, status=status)


@login_required
@require_safe
@never_cache
def account_detail(request, org_slug: str, pk: int):
    access = get_org_access_or_404(request.user, org_slug)
    return _detail_page(request, access, _account(access, pk))


account_detail.tenant_model = ServiceAccount


@login_required
@require_POST
def account_change(request, org_slug: str, pk: int):
    access, account = _managing(request, org_slug, pk)
    form = ServiceAccountChangeForm(request.POST)
    if form.is_valid():
        try:
            account = services.change_service_account(user=request.user, account=account, **form.cleaned_data)
        except ValidationError as error:
            apply_errors(form, error)
        else:
            messages.success(request, _("Service account %(name)s saved.") % {"name": account.username})
            return redirect("service_accounts:detail", org_slug=access.organization.slug, pk=account.pk)
    return _detail_page(request, access, account, change_form=form, status=400)


account_change.tenant_model = ServiceAccount


@login_required
@require_POST
@never_cache  # the page that shows a new key must not be kept by any cache
def token_create(request, org_slug: str, pk: int):
    access, account = _managing(request, org_slug, pk)
    form = TokenForm(request.POST)
    if form.is_valid():
        try:
            token, key = services.create_token(
                user=request.user,
                account=account,
                name=form.cleaned_data["name"],
                expires_in_days=form.cleaned_data["expires_in_days"],
                via=ApiToken.Via.SERVICE_ACCOUNT_PAGE,
                address=client_address(request),
            )
        except ValidationError as error:
            apply_errors(form, error)
        else:
            # Rendered, not redirected: the key must not wait in a session or a URL for the next page.
            return _detail_page(request, access, services.detailed(account), new={"token": token, "key": key})
    return _detail_page(request, access, account, token_form=form, status=400)


token_create.tenant_model = ServiceAccount


@login_required
@require_POST
def token_revoke(request, org_slug: str, pk: int):
    """POST `token`: the id of one of the account's tokens (another's is a 404)."""
    access, account = _managing(request, org_slug, pk)
    token_id = request.POST.get("token", "")
    token = get_object_or_404(services.tokens_of(account), pk=token_id if token_id.isdigit() else 0)
    services.revoke_token(user=request.user, account=account, token=token)
    messages.success(request, _("Token “%(name)s” revoked: it no longer works.") % {"name": token.name})
    return redirect("service_accounts:detail", org_slug=access.organization.slug, pk=account.pk)


token_revoke.tenant_model = ServiceAccount


def _switch(request, org_slug: str, pk: int, *, disable: bool):
    """GET: what disabling (or enabling) does, and a button; POST: do it."""
    access, account = _managing(request, org_slug, pk)
    if request.method == "POST":
        if disable:
            account = services.disable_service_account(user=request.user, account=account)
            message = _("Service account %(name)s disabled: its tokens are revoked.")
        else:
            account = services.enable_service_account(user=request.user, account=account)
            message = _("Service account %(name)s enabled. Create a new token for it: revoked ones stay revoked.")
        messages.success(request, message % {"name": account.username})
        return redirect("service_accounts:detail", org_slug=access.organization.slug, pk=account.pk)
    context = {"access": access, "org": access.organization, "account": account, "disable": disable}
    return render(request, "tenants/service_accounts/confirm.html", context)


@login_required
@require_http_methods(["GET", "POST"])
def account_disable(request, org_slug: str, pk: int):
    return _switch(request, org_slug, pk, disable=True)


account_disable.tenant_model = ServiceAccount


@login_required
@require_http_methods(["GET", "POST"])
def account_enable(request, org_slug: str, pk: int):
    return _switch(request, org_slug, pk, disable=False)


account_enable.tenant_model = ServiceAccount
