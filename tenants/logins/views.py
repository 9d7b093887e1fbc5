from django.conf import settings
from django.contrib.auth import views as auth_views

from tenants.logins.forms import LoginForm
from tenants.sso import provider


class LoginView(auth_views.LoginView):
    """The login page: "Sign in with <provider>" when one is set up, and the password form while local passwords
    are on (when off, only on the administrators' break-glass form, `?break-glass=1`). A locked-out attempt gets
    the form back with the lockout as its error, status 429."""

    form_class = LoginForm
    redirect_authenticated_user = True

    def get_context_data(self, **kwargs):
        sso = provider.enabled()
        return super().get_context_data(
            **kwargs,
            sso_enabled=sso,
            sso_provider_name=settings.OIDC_PROVIDER_NAME,
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
