"""A second factor for staff accounts (django-otp): set up on first login when STAFF_REQUIRE_2FA is on, a code on
every login before any page or session API call works, wrong codes throttled, recovery codes single-use, and a
program manager's reset of a lost phone, each in the audit trail. Codes are computed here from the device's key."""

import re
from binascii import unhexlify
from datetime import timedelta

import pytest
import time_machine
from django.test import Client
from django.utils import timezone
from django_otp.oath import totp
from django_otp.plugins.otp_static.models import StaticToken
from django_otp.plugins.otp_totp.models import TOTPDevice
from rest_framework.test import APIClient

from tenants.models import AuditEvent, StaffRole
from tenants.tokens.services import create_token
from tenants.twofactor import services
from tests.factories import PASSWORD, MembershipFactory, StaffRoleFactory

pytestmark = pytest.mark.django_db

STEP = timedelta(seconds=30)


@pytest.fixture
def required(settings):
    settings.STAFF_REQUIRE_2FA = True


@pytest.fixture
def clock():
    """A clock the test moves: each login's code comes from a later 30-second step (a code is accepted once)."""
    with time_machine.travel(timezone.now(), tick=False) as traveller:
        yield traveller


def log_in(username, client=None) -> Client:
    client = client or Client()
    response = client.post("/login/", {"username": username, "password": PASSWORD})
    assert response.status_code == 302, response.text
    return client


def code_for(key_hex: str) -> str:
    return f"{totp(unhexlify(key_hex)):06d}"


def enrol(client, clock) -> tuple[TOTPDevice, list[str]]:
    """Set up an app through the page; returns the device and the recovery codes shown once."""
    assert client.get("/account/two-factor/setup/").status_code == 200
    key = client.session[services.SESSION_SETUP_KEY]
    shown = client.post("/account/two-factor/setup/", {"code": code_for(key), "next": "/"})
    assert shown.status_code == 200, shown.text
    codes = re.findall(r"<li>([a-z2-7]{8})</li>", shown.text)
    clock.shift(STEP)
    return TOTPDevice.objects.get(key=key), codes


def session_api(client):
    return client.get("/api/v1/organizations/")


def test_staff_set_up_an_app_on_first_login_and_pages_wait_for_it(required, manager, clock):
    client = log_in(manager.username)
    page = client.get("/program/")
    assert page.status_code == 302
    assert page["Location"] == "/account/two-factor/setup/?next=%2Fprogram%2F"
    assert session_api(client).status_code == 401
    assert "second-factor code" in session_api(client).json()["detail"]

    setup = client.get(page["Location"])
    assert "<svg" in setup.text and "otpauth://totp/FM%20Program%20Portal%3A" in setup.text
    key = client.session[services.SESSION_SETUP_KEY]
    assert services.setup_secret(key).replace(" ", "") in setup.text.replace(" ", "")

    wrong = client.post("/account/two-factor/setup/", {"code": "000000"})
    assert wrong.status_code == 400 and "not the app&#x27;s current one" in wrong.text
    device, codes = enrol(client, clock)
    assert device.confirmed and device.user == manager
    assert len(codes) == services.RECOVERY_CODES == len(set(codes))
    assert client.get("/program/").status_code == 200
    assert session_api(client).status_code == 200
    event = AuditEvent.objects.get(action="account.two_factor_enabled")
    assert (event.actor, event.target_id, event.organization) == (manager, manager.pk, None)


def test_every_login_then_asks_for_the_code(required, manager, clock):
    device, _ = enrol(log_in(manager.username), clock)
    client = log_in(manager.username)
    page = client.get("/program/")
    assert page["Location"] == "/account/two-factor/verify/?next=%2Fprogram%2F"
    assert client.get("/account/tokens/").status_code == 302
    assert client.get("/admin/").status_code == 302
    assert session_api(client).status_code == 401

    wrong = client.post("/account/two-factor/verify/", {"code": "123456", "next": "/program/"})
    assert wrong.status_code == 400 and "That code is not right" in wrong.text
    clock.shift(STEP * 2)  # past the throttle of the one wrong code
    right = client.post("/account/two-factor/verify/", {"code": code_for(device.key), "next": "/program/"})
    assert right.status_code == 302 and right["Location"] == "/program/"
    assert client.get("/program/").status_code == 200
    assert session_api(client).status_code == 200


def test_a_code_is_accepted_once(required, manager, clock):
    device, _ = enrol(log_in(manager.username), clock)
    code = code_for(device.key)
    first = log_in(manager.username)
    assert first.post("/account/two-factor/verify/", {"code": code}).status_code == 302
    second = log_in(manager.username)
    assert second.post("/account/two-factor/verify/", {"code": code}).status_code == 400


def test_wrong_codes_are_throttled_even_the_right_one_waits(required, manager, clock):
    device, _ = enrol(log_in(manager.username), clock)
    client = log_in(manager.username)
    for _ in range(3):
        client.post("/account/two-factor/verify/", {"code": "000000"})
        clock.shift(timedelta(seconds=0.5))
    refused = client.post("/account/two-factor/verify/", {"code": code_for(device.key)})
    assert refused.status_code == 429
    assert "Too many wrong codes. Try again in" in refused.text
    assert int(refused["Retry-After"]) >= 1
    # Recovery codes wait too: the count is the account's, not one device's.
    assert client.post("/account/two-factor/verify/", {"code": "abcdefgh"}).status_code == 429
    assert client.get("/program/").status_code == 302
    clock.shift(STEP * 2)
    assert client.post("/account/two-factor/verify/", {"code": code_for(device.key)}).status_code == 302


def test_ten_wrong_codes_lock_for_minutes(required, manager, clock):
    device, _ = enrol(log_in(manager.username), clock)
    client = log_in(manager.username)
    for _ in range(10):
        clock.shift(timedelta(minutes=5))  # each try after its wait
        assert client.post("/account/two-factor/verify/", {"code": "000000"}).status_code == 400
    refused = client.post("/account/two-factor/verify/", {"code": code_for(device.key)})
    assert refused.status_code == 429
    assert int(refused["Retry-After"]) > 300


def test_a_recovery_code_works_once(required, manager, clock):
    _, codes = enrol(log_in(manager.username), clock)
    client = log_in(manager.username)
    used = client.post("/account/two-factor/verify/", {"code": codes[0].upper(), "next": "/program/"}, follow=True)
    assert used.redirect_chain[-1][0] == "/program/"
    assert "You used a recovery code: 9 are left." in used.text
    again = log_in(manager.username)
    assert again.post("/account/two-factor/verify/", {"code": codes[0]}).status_code == 400
    assert StaticToken.objects.filter(device__user=manager).count() == 9


def test_new_recovery_codes_replace_the_old(required, manager, clock):
    client = log_in(manager.username)
    _, old = enrol(client, clock)
    page = client.post("/account/two-factor/recovery-codes/")
    new = re.findall(r"<li>([a-z2-7]{8})</li>", page.text)
    assert len(new) == 10 and not set(new) & set(old)
    assert log_in(manager.username).post("/account/two-factor/verify/", {"code": old[1]}).status_code == 400
    clock.shift(STEP)  # past the wait the wrong code set
    assert log_in(manager.username).post("/account/two-factor/verify/", {"code": new[1]}).status_code == 302
    assert AuditEvent.objects.filter(action="account.recovery_codes", actor=manager).exists()


def test_an_unverified_session_cannot_replace_the_app(required, manager, clock):
    device, _ = enrol(log_in(manager.username), clock)
    client = log_in(manager.username)  # password only
    assert client.get("/account/two-factor/setup/").status_code == 302
    page = client.post("/account/two-factor/setup/", {"code": "123456"})
    assert page.status_code == 302
    assert list(TOTPDevice.objects.filter(user=manager)) == [device]


def test_a_program_manager_resets_a_lost_phone(required, manager, support, clock):
    enrol(log_in(manager.username), clock)
    support_session = log_in(support.username)
    enrol(support_session, clock)
    assert support_session.get("/support/").status_code == 200

    admin = log_in(manager.username)
    admin.post("/account/two-factor/verify/", {"code": code_for(TOTPDevice.objects.get(user=manager).key)})
    listing = admin.get("/program/staff/two-factor/")
    assert listing.status_code == 200 and support.username in listing.text
    reset = admin.post(f"/program/staff/{support.pk}/two-factor/reset/")
    assert reset.status_code == 302
    assert not TOTPDevice.objects.filter(user=support).exists()
    assert not StaticToken.objects.filter(device__user=support).exists()
    event = AuditEvent.objects.get(action="account.two_factor_reset")
    assert (event.actor, event.target_id) == (manager, support.pk)
    # The session that passed with the removed app passes no more: it sets up a new one.
    assert support_session.get("/support/")["Location"].startswith("/account/two-factor/setup/")


def test_only_program_managers_reset(manager, support, member, clock):
    enrol(log_in(manager.username), clock)
    for user in (support, member):
        client = Client()
        client.force_login(user)
        assert client.get("/program/staff/two-factor/").status_code == 403
        assert client.post(f"/program/staff/{manager.pk}/two-factor/reset/").status_code == 403
    assert TOTPDevice.objects.filter(user=manager).exists()


def test_a_program_manager_cannot_reset_a_superuser(manager, clock):
    root = StaffRoleFactory(user__is_superuser=True).user
    enrol(log_in(root.username), clock)
    client = Client()
    client.force_login(manager)
    assert client.post(f"/program/staff/{root.pk}/two-factor/reset/").status_code == 403
    assert TOTPDevice.objects.filter(user=root).exists()


def test_tenants_are_not_asked(required, member):
    client = log_in(member.username)
    assert client.get("/").status_code == 302
    org = member.memberships.get().organization
    assert client.get(f"/orgs/{org.slug}/").status_code == 200
    assert client.get("/account/two-factor/").status_code == 403
    assert session_api(client).status_code == 200


def test_without_the_setting_staff_are_not_asked_until_they_set_up_an_app(manager, clock):
    client = log_in(manager.username)
    assert client.get("/program/").status_code == 200
    device, _ = enrol(client, clock)  # set up by choice
    later = log_in(manager.username)
    assert later.get("/program/")["Location"].startswith("/account/two-factor/verify/")
    assert later.post("/account/two-factor/verify/", {"code": code_for(device.key)}).status_code == 302
    assert later.get("/program/").status_code == 200


def test_api_tokens_keep_working_but_a_password_alone_gets_none(required, manager, clock):
    enrol(log_in(manager.username), clock)
    _, key = create_token(user=manager, name="script", expires_in_days=7, via="page")
    api = APIClient()
    assert api.get("/api/v1/organizations/", HTTP_AUTHORIZATION=f"Token {key}").status_code == 200
    refused = api.post("/api/v1/auth/token/", {"username": manager.username, "password": PASSWORD})
    assert refused.status_code == 403
    assert "second factor" in refused.json()["detail"]
    tenant = MembershipFactory().user
    assert api.post("/api/v1/auth/token/", {"username": tenant.username, "password": PASSWORD}).status_code == 201


def test_htmx_requests_of_an_unverified_session_are_sent_to_the_code(required, manager, clock):
    enrol(log_in(manager.username), clock)
    client = log_in(manager.username)
    response = client.get("/support/", headers={"HX-Request": "true"})
    assert response["HX-Redirect"].startswith("/account/two-factor/verify/")


def test_the_verify_page_sends_elsewhere_only_within_the_site(manager, clock):
    device, _ = enrol(log_in(manager.username), clock)
    client = log_in(manager.username)
    response = client.post(
        "/account/two-factor/verify/", {"code": code_for(device.key), "next": "https://evil.example/"}
    )
    assert response["Location"] == "/"


def test_staff_role_accounts_and_superusers_are_staff_accounts(member):
    assert services.is_staff_account(StaffRoleFactory(role=StaffRole.Role.SUPPORT_ENGINEER).user)
    assert services.is_staff_account(MembershipFactory(user__is_superuser=True).user)
    assert not services.is_staff_account(member)


def test_the_pages_are_in_japanese(required, manager):
    client = log_in(manager.username)
    client.cookies["django_language"] = "ja"
    assert "認証アプリ" in client.get("/account/two-factor/setup/").text
