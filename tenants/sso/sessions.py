"""Ending someone's sessions from outside their browser. Every sign-in notes its session (SignInSession); a
back-channel logout from their provider (tenants/sso/logout.py), a deprovisioning (SCIM) or a deactivation ends
them at once: the session's data is deleted, so the very next request is signed out, pages and htmx alike."""

from __future__ import annotations

import logging
from datetime import timedelta
from importlib import import_module

from django.conf import settings
from django.contrib.auth.signals import user_logged_in, user_logged_out
from django.dispatch import receiver
from django.utils import timezone

from tenants.sso.models import SignInSession

logger = logging.getLogger("portal.sso")

SID = "sso_sid"  # session: the provider's session id (the ID token's `sid`), for back-channel logout
PROVIDER = "sso_provider"  # session: the key of the provider signed in with (tenants.sso.flow sets it)


@receiver(user_logged_in, dispatch_uid="tenants.sso.sessions.note")
def note(sender, request, user, **kwargs):
    note_session(request, user)


def note_session(request, user) -> None:
    """Records (or brings up to date) this request's session as `user`'s, with the provider and its session id
    now in it: at every sign-in, and after a provider's re-check that did not sign anyone in again."""
    session = getattr(request, "session", None)
    if session is None or not session.session_key:
        return
    SignInSession.objects.update_or_create(
        session_key=session.session_key,
        defaults={"user": user, "provider": session.get(PROVIDER, "")[:40], "sid": session.get(SID, "")[:255]},
    )
    # Rows of sessions that have expired since: nothing left to end.
    SignInSession.objects.filter(
        created_at__lt=timezone.now() - timedelta(seconds=settings.SESSION_COOKIE_AGE)
    ).delete()


@receiver(user_logged_out, dispatch_uid="tenants.sso.sessions.forget")
def forget(sender, request, user, **kwargs):
    session = getattr(request, "session", None)
    if session is not None and session.session_key:
        SignInSession.objects.filter(session_key=session.session_key).delete()


def end(rows) -> int:
    """Ends the sessions of these SignInSession rows (a queryset): their data deleted, the rows too."""
    store = import_module(settings.SESSION_ENGINE).SessionStore
    ended = 0
    for row in list(rows):
        store(session_key=row.session_key).delete()
        row.delete()
        ended += 1
    return ended


def end_all(user) -> int:
    """Every session of `user` (deprovisioned, deactivated, removed from everything)."""
    ended = end(SignInSession.objects.filter(user=user))
    if ended:
        logger.info("Ended %d session(s) of %s", ended, user.get_username())
    return ended
