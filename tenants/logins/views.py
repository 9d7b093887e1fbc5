from django.conf import settings
from django.contrib.auth import views as auth_views
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse_lazy
from django.utils.translation import ngettext

from tenants.logins import reset
from tenants.logins.forms import LoginForm, PasswordResetForm
from tenants.logins.lockout import lockout_end, lockout_message, seconds_until_unlocked
from tenants.sso import providers


class LoginView(auth_views.LoginView):
    """The login page: a "Sign in with <provider>" button for each provider set up, and the password form while
    local passwords are on (when off, only on the administrators' break-glass form, `?break-glass=1`). A locked-out
    attempt gets the form back with the lockout as its error, status 429."""

    form_class = LoginForm
    redirect_authenticated_user = True

    def get_context_data(self, **kwargs):
        found = providers.all()
        sso = bool(found)
        return super().get_context_data(
            **kwargs,
            sso_enabled=sso,
            sso_buttons=[(p.name, p.login_url(self.get_redirect_url())) for p in found],
            password_login=settings.LOCAL_PASSWORD_LOGIN,
            show_password_form=(
                not sso
                or settings.LOCAL_PASSWORD_LOGIN
                or "break-glass" in self.request.GET
                or self.request.method == "POST"
            ),
        )

    def form_invalid(self, form):
        response = super().form_invalid(form)
        if retry_after := getattr(form, "retry_after", None):
            response.status_code = 429
            response["Retry-After"] = str(retry_after)
        return response


class LocalPasswordsOnly:
    """The password reset pages exist while local passwords are on (LOCAL_PASSWORD_LOGIN): with them off, people
    sign in through their institution, which resets its own passwords."""

    def dispatch(self, request, *args, **kwargs):
        if not settings.LOCAL_PASSWORD_LOGIN:
            raise Http404
        return super().dispatch(request, *args, **kwargs)


class PasswordResetView(LocalPasswordsOnly, auth_views.PasswordResetView):
    """ "Forgot your password?": the same answer whether or not an account has that address (tenants.logins.reset);
    a client address that asked too often, or is locked out after failed logins, gets the form back with a 429."""

    form_class = PasswordResetForm
    email_template_name = "registration/password_reset_email.txt"
    success_url = reverse_lazy("password_reset_done")

    def form_valid(self, form):
        outcome = reset.request_reset(
            request=self.request,
            form=form,
            email_template_name=self.email_template_name,
            subject_template_name=self.subject_template_name,
            from_email=settings.DEFAULT_FROM_EMAIL,
        )
        if outcome != reset.Outcome.ADDRESS_LIMIT:
            return redirect(self.success_url)
        if lockout_end(self.request, None) is not None:
            seconds = seconds_until_unlocked(self.request, None)
            message = lockout_message(seconds)
        else:
            seconds = reset.address_wait(self.request)
            minutes = max(1, -(-seconds // 60))
            message = ngettext(
                "Too many password reset requests from this address. Try again in %(minutes)d minute.",
                "Too many password reset requests from this address. Try again in %(minutes)d minutes.",
                minutes,
            ) % {"minutes": minutes}
        form.add_error(None, message)
        response = self.render_to_response(self.get_context_data(form=form), status=429)
        response["Retry-After"] = str(seconds)
        return response


class PasswordResetDoneView(LocalPasswordsOnly, auth_views.PasswordResetDoneView):
    def get_context_data(self, **kwargs):
        return {**super().get_context_data(**kwargs), "minutes": settings.PASSWORD_RESET_TIMEOUT // 60}


class PasswordResetConfirmView(LocalPasswordsOnly, auth_views.PasswordResetConfirmView):
    """The emailed link: a new password, refused while the account or the address is locked out after failed
    logins. It never logs in (the login page and its limits, and any second factor, still stand), and every
    other session of the account ends with the old password (Django's session hash)."""

    success_url = reverse_lazy("password_reset_complete")

    def form_valid(self, form):
        if lockout_end(self.request, self.user.get_username()) is not None:
            seconds = seconds_until_unlocked(self.request, self.user.get_username())
            response = render(
                self.request, "registration/locked_out.html", {"message": lockout_message(seconds)}, status=429
            )
            response["Retry-After"] = str(seconds)
            return response
        response = super().form_valid(form)
        reset.note_reset(user=self.user)
        return response
