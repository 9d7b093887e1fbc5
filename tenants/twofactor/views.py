"""Pages of the second factor: one's own (overview, setup, the code at login, new recovery codes) and program
managers' list of staff accounts, where a lost phone is reset."""

from __future__ import annotations

import django_otp
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Exists, OuterRef, Q
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme, urlencode
from django.utils.safestring import mark_safe
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST
from django_otp.plugins.otp_totp.models import TOTPDevice

from tenants.access import can_reset_second_factor, is_program_manager
from tenants.twofactor import services
from tenants.twofactor.forms import AppCodeForm, CodeForm


def _next_url(request) -> str:
    """Where to go once the code is in: the page asked for, if it is on this site."""
    target = request.POST.get("next") or request.GET.get("next") or ""
    if url_has_allowed_host_and_scheme(target, {request.get_host()}, require_https=request.is_secure()):
        return target
    return reverse("home")


def _require_staff_account(user) -> None:
    if not services.is_staff_account(user):
        raise PermissionDenied(_("Two-factor authentication is for program staff accounts."))


def _passed(request, device) -> None:
    """The session has passed its second factor: a new session key for the stronger session."""
    request.session.cycle_key()
    django_otp.login(request, device)


@login_required
@never_cache
def overview(request):
    _require_staff_account(request.user)
    app = TOTPDevice.objects.filter(user=request.user, confirmed=True).first()
    context = {
        "app": app,
        "codes_left": services.recovery_codes_left(request.user) if app else 0,
        "can_manage": is_program_manager(request.user) or request.user.is_superuser,
    }
    return render(request, "tenants/twofactor/overview.html", context)


@login_required
@never_cache  # the page shows a secret
def setup(request):
    _require_staff_account(request.user)
    if services.has_second_factor(request.user):
        messages.info(request, _("Your authenticator app is set up already."))
        return redirect("two-factor")
    key = request.session.get(services.SESSION_SETUP_KEY) or services.new_setup_key()
    request.session[services.SESSION_SETUP_KEY] = key
    form = AppCodeForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        result = services.enrol(user=request.user, key=key, code=form.cleaned_data["code"].strip())
        if result is not None:
            device, codes = result
            del request.session[services.SESSION_SETUP_KEY]
            _passed(request, device)
            context = {"codes": codes, "next": _next_url(request), "first": True}
            return render(request, "tenants/twofactor/recovery_codes.html", context)
        form.add_error("code", _("That code is not the app's current one: check the app's clock, and try the next."))
    uri = services.setup_uri(user=request.user, key=key)
    context = {
        "form": form,
        "qr": mark_safe(services.qr_svg(uri)),  # noqa: S308 (drawn by the qrcode library from our own URI)
        "secret": services.setup_secret(key),
        "uri": uri,
        "next": _next_url(request),
        "required": services.owes_second_factor(request),
    }
    return render(request, "tenants/twofactor/setup.html", context, status=400 if form.errors else 200)


@login_required
@never_cache
def verify(request):
    if not services.owes_second_factor(request):
        return redirect(_next_url(request))
    if not services.has_second_factor(request.user):
        return redirect(reverse("two-factor-setup") + "?" + urlencode({"next": _next_url(request)}))
    form = CodeForm(request.POST or None)
    status = 200
    if request.method == "POST" and form.is_valid():
        check = services.check_code(user=request.user, code=form.cleaned_data["code"])
        if check.device is not None:
            _passed(request, check.device)
            if check.recovery_codes_left is not None:
                messages.warning(
                    request,
                    ngettext(
                        "You used a recovery code: %(count)d is left. Make new ones on the two-factor page.",
                        "You used a recovery code: %(count)d are left. Make new ones on the two-factor page.",
                        check.recovery_codes_left,
                    )
                    % {"count": check.recovery_codes_left},
                )
            return redirect(_next_url(request))
        if check.wait:
            form.add_error(
                None,
                ngettext(
                    "Too many wrong codes. Try again in %(seconds)d second.",
                    "Too many wrong codes. Try again in %(seconds)d seconds.",
                    check.wait,
                )
                % {"seconds": check.wait},
            )
            status = 429
        else:
            form.add_error("code", _("That code is not right. Enter the app's current code, or a recovery code."))
            status = 400
    response = render(
        request, "tenants/twofactor/verify.html", {"form": form, "next": _next_url(request)}, status=status
    )
    if status == 429:
        response["Retry-After"] = str(check.wait)
    return response


@login_required
@require_POST
@never_cache  # the answer shows the codes
def recovery_codes(request):
    _require_staff_account(request.user)
    if not services.has_second_factor(request.user):
        return redirect("two-factor-setup")
    codes = services.replace_recovery_codes(user=request.user)
    return render(request, "tenants/twofactor/recovery_codes.html", {"codes": codes, "next": reverse("two-factor")})


def _staff_accounts():
    return (
        get_user_model()
        .objects.filter(Q(staff_role__isnull=False) | Q(is_staff=True) | Q(is_superuser=True), is_active=True)
        .select_related("staff_role")
        .annotate(
            has_app=Exists(TOTPDevice.objects.filter(user=OuterRef("pk"), confirmed=True)),
            codes_left=Count("staticdevice__token_set", filter=Q(staticdevice__confirmed=True)),
        )
        .order_by("username")
    )


@login_required
def staff_list(request):
    if not (is_program_manager(request.user) or request.user.is_superuser):
        raise PermissionDenied(_("Only a program manager can reset a staff account's second factor."))
    accounts = list(_staff_accounts())
    for account in accounts:
        account.can_reset = account.has_app and can_reset_second_factor(request.user, account)
    return render(request, "tenants/twofactor/staff_list.html", {"accounts": accounts})


@login_required
@require_POST
def staff_reset(request, user_id: int):
    if not (is_program_manager(request.user) or request.user.is_superuser):
        raise PermissionDenied(_("Only a program manager can reset a staff account's second factor."))
    target = get_object_or_404(_staff_accounts(), pk=user_id)
    if not can_reset_second_factor(request.user, target):
        raise PermissionDenied(_("Only a program manager can reset a staff account's second factor."))
    services.reset_second_factor(user=target, by=request.user)
    messages.success(
        request,
        _("The authenticator app and recovery codes of %(username)s are removed: they can set up a new app.")
        % {"username": target.get_username()},
    )
    return redirect("staff-two-factor")
