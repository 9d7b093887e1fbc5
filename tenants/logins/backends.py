"""Passwords: Django's ModelBackend, refusing everyone but break-glass accounts when LOCAL_PASSWORD_LOGIN is False,
and service accounts always."""

from django.conf import settings
from django.contrib.auth.backends import ModelBackend

from tenants.service_accounts.models import is_service_account


def password_login_allowed(user) -> bool:
    """Whether this account may sign in with a password: any while local passwords are on; otherwise only the
    break-glass accounts (Django superusers), for the day the institution's provider is down."""
    return settings.LOCAL_PASSWORD_LOGIN or user.is_superuser


class LocalPasswordBackend(ModelBackend):
    """ModelBackend asks this on every sign-in and on every request of a session it made: switching local
    passwords off also ends the password sessions of everyone but break-glass accounts."""

    def user_can_authenticate(self, user) -> bool:
        return super().user_can_authenticate(user) and password_login_allowed(user)

    def authenticate(self, request, username=None, password=None, **kwargs):
        """A service account never signs in with a password (the login page, the token endpoint), even if someone
        gave it one in Django admin: it acts through its API tokens only. Checked here, at sign-in, not in
        user_can_authenticate, which every request of a session asks: a service account never gets a session."""
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is not None and is_service_account(user):
            return None
        return user
