from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import ValidationError

from tenants.logins.lockout import is_locked_out, lockout_message, seconds_until_unlocked


class LoginForm(AuthenticationForm):
    """Django's login form, saying so when a lockout refused the login (the password is not even checked)."""

    def get_invalid_login_error(self) -> ValidationError:
        if is_locked_out(self.request):
            seconds = seconds_until_unlocked(self.request, self.cleaned_data.get("username"))
            self.retry_after = seconds
            return ValidationError(lockout_message(seconds), code="locked_out")
        return super().get_invalid_login_error()
