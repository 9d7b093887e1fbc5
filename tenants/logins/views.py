from django.contrib.auth import views as auth_views

from tenants.logins.forms import LoginForm


class LoginView(auth_views.LoginView):
    """The login page: a locked-out attempt gets the form back with the lockout as its error, status 429."""

    form_class = LoginForm
    redirect_authenticated_user = True

    def form_invalid(self, form):
        response = super().form_invalid(form)
        if retry_after := getattr(form, "retry_after", None):
            response.status_code = 429
            response["Retry-After"] = str(retry_after)
        return response
