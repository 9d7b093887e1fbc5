"""The login form and the password-reset request form."""

from django.conf import settings
from django.contrib.auth import forms as auth_forms
from django.core.exceptions import ValidationError
from django.urls import reverse
from django.utils.translation import gettext as _

from tenants.logins.lockout import is_locked_out, lockout_message, seconds_until_unlocked
from tenants.sso import providers


def password_login_off_message() -> str:
    return _(
        "Sign-in with a password is only for break-glass administrator accounts here: sign in with %(provider)s."
    ) % {"provider": _(" or ").join(provider.name for provider in providers.all()) or _("your institution")}


class LoginForm(auth_forms.AuthenticationForm):
    """Django's login form, saying so when a lockout refused the login (the password is not even checked), or
    when passwords are switched off (whether the password was right or not: no hint either way)."""

    def get_invalid_login_error(self) -> ValidationError:
        if is_locked_out(self.request):
            seconds = seconds_until_unlocked(self.request, self.cleaned_data.get("username"))
            self.retry_after = seconds
            return ValidationError(lockout_message(seconds), code="locked_out")
        if not settings.LOCAL_PASSWORD_LOGIN:
            return ValidationError(password_login_off_message(), code="password_login_off")
        return super().get_invalid_login_error()


class PasswordResetForm(auth_forms.PasswordResetForm):
    """Django's form, its email linking to the portal's configured address (PORTAL_URL), not the request's host:
    a forged Host header cannot point the link elsewhere."""

    def send_mail(self, subject_template_name, email_template_name, context, from_email, to_email, **kwargs):
        path = reverse("password_reset_confirm", kwargs={"uidb64": context["uid"], "token": context["token"]})
        context = {**context, "reset_url": settings.PORTAL_URL + path, "minutes": settings.PASSWORD_RESET_TIMEOUT // 60}
        super().send_mail(subject_template_name, email_template_name, context, from_email, to_email, **kwargs)
