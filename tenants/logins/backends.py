"""Passwords: Django's ModelBackend, refusing everyone but break-glass accounts when LOCAL_PASSWORD_LOGIN is False."""

from django.conf import settings
from django.contrib.auth.backends import ModelBackend


def password_login_allowed(user) -> bool:
    """Whether this account may sign in with a password: any while local passwords are on; otherwise only the
    break-glass accounts (Django superusers), for the day the institution's provider is down."""
    return settings.LOCAL_PASSWORD_LOGIN or user.is_superuser


class LocalPasswordBackend(ModelBackend):
    """ModelBackend asks this on every sign-in and on every request of a session it made: switching local
    passwords off also ends the password sessions of everyone but break-glass accounts."""

    def user_can_authenticate(self, user) -> bool:
        return super().user_can_authenticate(user) and password_login_allowed(user)
