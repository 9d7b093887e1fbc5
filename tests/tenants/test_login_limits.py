"""Failed-login limits: per account and per client address, on the login page and the API token endpoint.

Ten failures lock the account (from any address) or the address (for any account) for 15 minutes; during a
lockout the right password is refused too; afterwards it works again."""

import logging
from datetime import timedelta

import pytest
import time_machine
from axes.models import AccessFailureLog
from django.utils import timezone

from tests.factories import PASSWORD, MembershipFactory, StaffRoleFactory

LIMIT = 10
LOCKED = "Too many failed logins for this account or from this address."

pytestmark = pytest.mark.django_db


def page_login(client, username, password, address="10.0.0.1", **headers):
    return client.post("/login/", {"username": username, "password": password}, REMOTE_ADDR=address, **headers)


def api_login(api_client, username, password, address="10.0.0.1", **headers):
    return api_client.post(
        "/api/v1/auth/token/", {"username": username, "password": password}, REMOTE_ADDR=address, **headers
    )


def logged_in(response) -> bool:
    return response.status_code == 302 and "_auth_user_id" in response.wsgi_request.session


@pytest.fixture
def user():
    return MembershipFactory().user


# --- the login page ---------------------------------------------------------------------------------


def test_page_locks_an_account_after_ten_failures_and_refuses_the_right_password(client, user):
    for attempt in range(1, LIMIT):
        response = page_login(client, user.username, "wrong")
        assert response.status_code == 200, attempt
        assert LOCKED not in response.text
    tenth = page_login(client, user.username, "wrong")
    assert tenth.status_code == 429
    assert LOCKED in tenth.text
    assert "Try again in 15 minutes." in tenth.text
    assert tenth["Retry-After"] == "900"

    right = page_login(client, user.username, PASSWORD)
    assert right.status_code == 429
    assert LOCKED in right.text
    assert not logged_in(right)


def test_page_lockout_of_an_account_holds_from_another_address(client, user):
    for attempt in range(LIMIT):
        page_login(client, user.username, "wrong", address=f"10.0.1.{attempt}")
    response = page_login(client, user.username, PASSWORD, address="192.0.2.7")
    assert response.status_code == 429
    assert not logged_in(response)


def test_page_locks_an_address_that_tries_many_accounts(client, user):
    for attempt in range(LIMIT):
        page_login(client, f"guess{attempt}", "wrong", address="203.0.113.9")
    from_there = page_login(client, user.username, PASSWORD, address="203.0.113.9")
    assert from_there.status_code == 429
    assert not logged_in(from_there)
    # The account itself is not locked: from elsewhere its owner logs in.
    assert logged_in(page_login(client, user.username, PASSWORD, address="198.51.100.4"))


def test_page_lockout_ends_after_the_cool_off(client, user):
    start = timezone.now()
    with time_machine.travel(start, tick=False):
        for _ in range(LIMIT):
            page_login(client, user.username, "wrong")
    with time_machine.travel(start + timedelta(minutes=14), tick=False):
        still = page_login(client, user.username, PASSWORD)
        assert still.status_code == 429
        assert "Try again in 1 minute." in still.text
    with time_machine.travel(start + timedelta(minutes=16), tick=False):
        assert logged_in(page_login(client, user.username, PASSWORD))


def test_attempts_during_a_lockout_do_not_extend_it(client, user):
    start = timezone.now()
    with time_machine.travel(start, tick=False):
        for _ in range(LIMIT):
            page_login(client, user.username, "wrong")
    with time_machine.travel(start + timedelta(minutes=10), tick=False):
        page_login(client, user.username, "wrong")
    with time_machine.travel(start + timedelta(minutes=16), tick=False):
        assert logged_in(page_login(client, user.username, PASSWORD))


def test_failures_below_the_limit_do_not_lock(client, user):
    for _ in range(LIMIT - 1):
        page_login(client, user.username, "wrong")
    assert logged_in(page_login(client, user.username, PASSWORD))


def test_forwarded_for_is_ignored_unless_a_proxy_is_configured(client, user, settings):
    # A client rotating X-Forwarded-For cannot escape the limit on its own address.
    for attempt in range(LIMIT):
        page_login(client, f"guess{attempt}", "wrong", address="203.0.113.9", HTTP_X_FORWARDED_FOR=f"10.9.9.{attempt}")
    assert page_login(client, user.username, PASSWORD, address="203.0.113.9").status_code == 429


def test_behind_a_configured_proxy_the_address_comes_from_forwarded_for(client, user, settings):
    settings.TRUSTED_PROXY_COUNT = 1
    proxy = "172.18.0.5"
    for attempt in range(LIMIT):
        page_login(client, f"guess{attempt}", "wrong", address=proxy, HTTP_X_FORWARDED_FOR="spoofed, 203.0.113.9")
    # The attacker's address is locked; everyone else behind the same proxy is not.
    assert (
        page_login(client, user.username, PASSWORD, address=proxy, HTTP_X_FORWARDED_FOR="203.0.113.9").status_code
        == 429
    )
    assert logged_in(page_login(client, user.username, PASSWORD, address=proxy, HTTP_X_FORWARDED_FOR="198.51.100.4"))


def test_a_lockout_is_logged_once_and_kept_in_the_failure_log(client, user, caplog):
    with caplog.at_level(logging.INFO, logger="portal.logins"):
        for _ in range(LIMIT + 2):
            page_login(client, user.username, "wrong")
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and r.name == "portal.logins"]
    assert len(warnings) == 1
    assert f"username='{user.username}'" in warnings[0] and "address=10.0.0.1" in warnings[0]
    refused = [r for r in caplog.records if r.name == "portal.logins" and "refused during a lockout" in r.getMessage()]
    assert len(refused) == 2
    flags = sorted(AccessFailureLog.objects.filter(username=user.username).values_list("locked_out", flat=True))
    assert flags == [False] * (LIMIT - 1) + [True]


def test_the_lockout_page_is_in_japanese(client, user):
    client.cookies["django_language"] = "ja"
    for _ in range(LIMIT):
        response = page_login(client, user.username, "wrong")
    assert response.status_code == 429
    assert "15 分後" in response.text


def test_admin_login_is_locked_too_and_says_so(client):
    staff = StaffRoleFactory().user
    staff.is_staff = staff.is_superuser = True
    staff.save()
    for _ in range(LIMIT):
        client.post("/admin/login/", {"username": staff.username, "password": "wrong"}, REMOTE_ADDR="10.0.0.1")
    response = client.post("/admin/login/", {"username": staff.username, "password": PASSWORD}, REMOTE_ADDR="10.0.0.1")
    assert response.status_code == 429
    assert LOCKED in response.text
    assert response["Retry-After"].isdigit()


# --- the API token endpoint ---------------------------------------------------------------------------


def test_api_locks_an_account_after_ten_failures_with_a_json_429(api_client, user):
    for attempt in range(1, LIMIT):
        assert api_login(api_client, user.username, "wrong").status_code == 400, attempt
    tenth = api_login(api_client, user.username, "wrong")
    assert tenth.status_code == 429
    assert tenth["Content-Type"] == "application/json"
    assert LOCKED in tenth.json()["detail"]
    assert tenth["Retry-After"] == "900"

    right = api_login(api_client, user.username, PASSWORD)
    assert right.status_code == 429
    assert "token" not in right.json()


def test_api_locks_an_address_that_tries_many_accounts(api_client, user):
    for attempt in range(LIMIT):
        api_login(api_client, f"guess{attempt}", "wrong", address="203.0.113.9")
    assert api_login(api_client, user.username, PASSWORD, address="203.0.113.9").status_code == 429
    assert api_login(api_client, user.username, PASSWORD, address="198.51.100.4").status_code == 201


def test_api_lockout_ends_after_the_cool_off(api_client, user):
    start = timezone.now()
    with time_machine.travel(start, tick=False):
        for _ in range(LIMIT):
            api_login(api_client, user.username, "wrong")
    with time_machine.travel(start + timedelta(minutes=16), tick=False):
        assert api_login(api_client, user.username, PASSWORD).status_code == 201


def test_page_and_api_failures_count_together(client, api_client, user):
    for _ in range(LIMIT // 2):
        page_login(client, user.username, "wrong")
        api_login(api_client, user.username, "wrong")
    assert api_login(api_client, user.username, PASSWORD).status_code == 429
    assert page_login(client, user.username, PASSWORD).status_code == 429
