"""Password reset by email: Django's views and token, through the login limits, never telling whether an account
exists, with the link built on PORTAL_URL."""

import re
from datetime import timedelta

import pytest
import time_machine
from django.contrib.auth import get_user_model
from django.core import mail
from django.test import Client
from django.utils import timezone

from tenants.models import AuditEvent
from tests.factories import PASSWORD, MembershipFactory

pytestmark = pytest.mark.django_db

NEW_PASSWORD = "a fresh one for the lab"
SENT_PAGE = "Check your email"
LOGIN_LIMIT = 10


@pytest.fixture(autouse=True)
def portal_url(settings):
    settings.PORTAL_URL = "https://portal.example.org"
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"


@pytest.fixture
def user():
    return MembershipFactory(user__email="ayaka@sakura.example").user


def ask(client, email, address="10.0.0.1"):
    return client.post("/password-reset/", {"email": email}, REMOTE_ADDR=address, follow=True)


def link_in(message) -> str:
    url = re.search(r"https://portal\.example\.org(/password-reset/[^/\s]+/[^/\s]+/)", message.body)
    assert url, message.body
    return url.group(1)


def set_password(client, link, password=NEW_PASSWORD, address="10.0.0.1"):
    """Open the emailed link (Django moves the token into the session) and post the new password."""
    form = client.get(link, REMOTE_ADDR=address, follow=True)
    return client.post(
        form.redirect_chain[-1][0] if form.redirect_chain else link,
        {"new_password1": password, "new_password2": password},
        REMOTE_ADDR=address,
    )


def can_log_in(password, username, address="10.0.0.2") -> bool:
    response = Client().post("/login/", {"username": username, "password": password}, REMOTE_ADDR=address)
    return response.status_code == 302


def fail_logins(username, address="10.9.9.9", times=LOGIN_LIMIT):
    for _ in range(times):
        Client().post("/login/", {"username": username, "password": "wrong"}, REMOTE_ADDR=address)


def test_the_login_page_links_to_the_reset(client):
    assert 'href="/password-reset/"' in client.get("/login/").text


def test_reset_end_to_end_and_the_link_works_once(client, user):
    other_session = Client()
    other_session.force_login(user)
    assert other_session.get("/").status_code == 302  # logged in: sent on to its org

    asked = ask(client, "Ayaka@Sakura.example")  # any case of the address
    assert asked.status_code == 200 and SENT_PAGE in asked.text
    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.to == ["ayaka@sakura.example"]
    assert user.username in message.body and "60 minutes" in message.body
    link = link_in(message)

    done = set_password(client, link)
    assert done.status_code == 302 and done["Location"] == "/password-reset/done/"
    assert "every other session of your account has ended" in client.get(done["Location"]).text
    assert can_log_in(NEW_PASSWORD, user.username) and not can_log_in(PASSWORD, user.username)
    # Not logged in by the reset; the other session has ended.
    assert "_auth_user_id" not in client.session
    assert other_session.get("/")["Location"].startswith("/login/")
    event = AuditEvent.objects.get(action="account.password_reset")
    assert (event.actor, event.target_id, event.organization) == (user, user.pk, None)

    again = Client().get(link, follow=True)
    assert "This link does not work" in again.text
    assert "new_password1" not in again.text


def test_an_expired_link_is_refused(client, user, settings):
    start = timezone.now()
    with time_machine.travel(start, tick=False):
        ask(client, user.email)
    link = link_in(mail.outbox[0])
    with time_machine.travel(start + timedelta(minutes=settings.PASSWORD_RESET_TIMEOUT // 60 + 1), tick=False):
        page = client.get(link, follow=True)
        assert "This link does not work" in page.text
        assert "new_password1" not in page.text
    assert can_log_in(PASSWORD, user.username)


def test_a_tampered_token_is_refused(client, user):
    ask(client, user.email)
    link = link_in(mail.outbox[0])
    page = client.get(link[:-3] + "xx/", follow=True)
    assert "This link does not work" in page.text


def test_no_account_gets_the_same_page_and_no_email(client, user):
    known = ask(client, user.email)
    unknown = ask(Client(), "nobody@nowhere.example")
    assert unknown.status_code == known.status_code == 200
    assert unknown.redirect_chain == known.redirect_chain
    strip = lambda text: re.sub(r'name="csrfmiddlewaretoken" value="[^"]+"|csrftoken": "[^"]+"', "", text)  # noqa: E731
    assert strip(unknown.text) == strip(known.text)
    assert len(mail.outbox) == 1


def test_an_account_without_a_usable_password_gets_no_email(client, user):
    """People who sign in through their institution (SSO) have no password here to reset."""
    user.set_unusable_password()
    user.save()
    page = ask(client, user.email)
    assert SENT_PAGE in page.text
    assert mail.outbox == []


def test_an_inactive_account_gets_no_email(client, user):
    get_user_model().objects.filter(pk=user.pk).update(is_active=False)
    assert SENT_PAGE in ask(client, user.email).text
    assert mail.outbox == []


def test_a_locked_out_account_gets_no_email_and_the_same_page(client, user):
    fail_logins(user.username)
    page = ask(client, user.email)
    assert SENT_PAGE in page.text
    assert mail.outbox == []


def test_a_reset_does_not_lift_a_lockout(client, user):
    ask(client, user.email)
    link = link_in(mail.outbox[0])
    fail_logins(user.username)  # locked out after the email went
    refused = set_password(client, link)
    assert refused.status_code == 429
    assert "Too many failed logins" in refused.text
    assert not can_log_in(NEW_PASSWORD, user.username)
    assert not AuditEvent.objects.filter(action="account.password_reset").exists()


def test_a_successful_reset_does_not_clear_the_failed_logins(client, user):
    fail_logins(user.username, times=LOGIN_LIMIT - 1)
    ask(client, user.email)
    set_password(client, link_in(mail.outbox[0]))
    fail_logins(user.username, times=1)  # the tenth failure still locks
    assert not can_log_in(NEW_PASSWORD, user.username)


def test_a_locked_out_address_is_told_so(client, user):
    for attempt in range(LOGIN_LIMIT):
        Client().post("/login/", {"username": f"guess{attempt}", "password": "x"}, REMOTE_ADDR="203.0.113.9")
    page = client.post("/password-reset/", {"email": user.email}, REMOTE_ADDR="203.0.113.9")
    assert page.status_code == 429
    assert "Too many failed logins" in page.text
    assert mail.outbox == []


def test_requests_per_email_address_are_limited_without_saying_so(client, user, settings):
    for attempt in range(settings.PASSWORD_RESET_EMAIL_LIMIT + 2):
        page = ask(client, user.email, address=f"10.0.2.{attempt}")
        assert SENT_PAGE in page.text
    assert len(mail.outbox) == settings.PASSWORD_RESET_EMAIL_LIMIT
    with time_machine.travel(timezone.now() + timedelta(minutes=61), tick=False):
        ask(client, user.email, address="10.0.3.1")
    assert len(mail.outbox) == settings.PASSWORD_RESET_EMAIL_LIMIT + 1


def test_requests_per_client_address_are_limited(client, user, settings):
    for attempt in range(settings.PASSWORD_RESET_ADDRESS_LIMIT):
        assert SENT_PAGE in ask(client, f"someone{attempt}@example.com", address="198.51.100.7").text
    refused = client.post("/password-reset/", {"email": user.email}, REMOTE_ADDR="198.51.100.7")
    assert refused.status_code == 429
    assert "Too many password reset requests from this address. Try again in 60 minutes." in refused.text
    assert int(refused["Retry-After"]) > 3500
    assert mail.outbox == []
    assert SENT_PAGE in ask(client, user.email, address="198.51.100.8").text  # another address may
    assert len(mail.outbox) == 1


def test_a_bad_email_is_a_form_error(client):
    page = client.post("/password-reset/", {"email": "not an address"})
    assert page.status_code == 200
    assert "Enter a valid email address." in page.text


def test_a_forged_host_cannot_move_the_link(client, user, settings):
    settings.ALLOWED_HOSTS = ["*"]
    client.post("/password-reset/", {"email": user.email}, HTTP_HOST="evil.example")
    assert "evil.example" not in mail.outbox[0].body
    assert "https://portal.example.org/password-reset/" in mail.outbox[0].body


def test_the_new_password_is_checked_by_the_validators(client, user):
    ask(client, user.email)
    refused = set_password(client, link_in(mail.outbox[0]), password="12345678")
    assert refused.status_code == 200
    assert "This password is entirely numeric." in refused.text
    assert can_log_in(PASSWORD, user.username)


def test_the_pages_are_in_japanese(client, user):
    client.cookies["django_language"] = "ja"
    assert "パスワードの再設定" in client.get("/password-reset/").text
    ask(client, user.email)
    assert "パスワード" in mail.outbox[0].subject
