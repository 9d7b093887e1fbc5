"""A database blip is a 503 with Retry-After, and a read is tried once more on a fresh connection (portal/database.py).

Seen in the fault run: 11 writes during a 0.7 s PostgreSQL restart answered 500 "Server error". Here the database
really goes away: the server ends the connection the request would use (pg_terminate_backend), or the connection
is refused (PostgreSQL on a port nothing listens on; SQLite on a file that cannot be opened). The test client does
not close broken connections between requests as Django's request_finished does in a server, so the tests do that
where a server would.
"""

import logging
import socket

import pytest
from django.db import OperationalError, ProgrammingError, connection
from django.test import Client
from rest_framework.test import APIClient

from portal.database import connection_lost
from workloads.support.models import SupportCase

pytestmark = pytest.mark.django_db(transaction=True)  # a retry needs work outside a test's transaction

on_postgresql = pytest.mark.postgresql("terminates a PostgreSQL backend")
RETRIED = "trying once more"


@pytest.fixture(autouse=True)
def no_broken_connection_left():
    """A test that fails half way must not leave the next (and the flush after it) a dropped connection."""
    yield
    connection.close_if_unusable_or_obsolete()


@pytest.fixture
def page_client(member) -> Client:
    client = Client(raise_request_exception=False)  # a server answers; it does not raise into the caller
    client.force_login(member)
    return client


@pytest.fixture
def api(member) -> APIClient:
    client = APIClient(raise_request_exception=False)
    client.force_authenticate(member)
    return client


def _terminate_the_request_connection() -> None:
    """The server ends the connection this thread (and so the test client's requests) uses, as a restart does."""
    import psycopg

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    params = connection.get_connection_params()
    with psycopg.connect(**params, autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])


@pytest.fixture
def refused():
    """The database refuses every new connection: PostgreSQL on a port nothing listens on, SQLite on a file that
    cannot be opened."""
    saved = dict(connection.settings_dict)
    connection.close()
    if connection.vendor == "postgresql":
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            closed_port = s.getsockname()[1]
        connection.settings_dict.update(HOST="127.0.0.1", PORT=str(closed_port))
    else:
        connection.settings_dict["NAME"] = "/nonexistent-folder/portal.sqlite3"
    yield
    connection.close()
    connection.settings_dict.clear()
    connection.settings_dict.update(saved)


# --- A read is tried once more ----------------------------------------------------------------------------------


@on_postgresql
@pytest.mark.parametrize("method", ["get", "head"])
def test_a_read_whose_connection_was_dropped_is_answered_on_a_fresh_one(page_client, org, method, caplog):
    page_client.get(f"/orgs/{org.slug}/")  # the connection is open and in use
    _terminate_the_request_connection()
    with caplog.at_level(logging.WARNING, logger="portal.database"):
        response = getattr(page_client, method)(f"/orgs/{org.slug}/")
    assert response.status_code == 200
    assert [r.levelname for r in caplog.records] == ["WARNING"]
    assert RETRIED in caplog.text and f"{method.upper()} /orgs/{org.slug}/" in caplog.text


@on_postgresql
def test_an_api_read_whose_connection_was_dropped_is_answered_on_a_fresh_one(api, org):
    api.get("/api/v1/organizations/")
    _terminate_the_request_connection()
    response = api.get("/api/v1/organizations/")
    assert response.status_code == 200
    assert [o["slug"] for o in response.json()["results"]] == [org.slug]


# --- Refused: 503 with Retry-After ------------------------------------------------------------------------------


def test_a_page_is_a_503_that_says_try_again_when_the_database_refuses(page_client, org, refused, caplog):
    with caplog.at_level(logging.WARNING, logger="portal.database"):
        response = page_client.get(f"/orgs/{org.slug}/")
    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    assert response["Content-Type"].startswith("text/html")
    assert "Try again in a moment" in response.text and "cannot reach its database" in response.text
    # Tried once more, then said once, without a traceback.
    assert [r.levelname for r in caplog.records] == ["WARNING", "ERROR"]
    assert "Database unavailable: 503 to GET" in caplog.text
    assert not any(r.exc_info for r in caplog.records)


def test_the_try_again_page_is_in_japanese(page_client, org, refused, settings):
    page_client.cookies[settings.LANGUAGE_COOKIE_NAME] = "ja"
    response = page_client.get(f"/orgs/{org.slug}/")
    assert response.status_code == 503
    assert '<html lang="ja">' in response.text
    assert "ポータルは現在データベースに接続できません。" in response.text


def test_with_debug_on_a_view_that_loses_the_database_is_a_503_too(page_client, org, refused, settings):
    settings.DEBUG = True  # `DEBUG=1 make run`: Django's debug page would answer the 500 handler's exceptions
    response = page_client.get(f"/orgs/{org.slug}/")
    assert response.status_code == 503
    assert "Try again in a moment" in response.text


def test_the_api_answers_json_503_when_the_database_refuses(api, refused):
    response = api.get("/api/v1/organizations/")
    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    assert response.json() == {"detail": "The database is not answering just now. Try again in a few seconds."}


def test_the_login_page_is_a_503_not_a_500_when_the_database_refuses(refused):
    # An anonymous page whose database use is in its template (a TemplateResponse, rendered after the view).
    response = Client(raise_request_exception=False).post("/login/", {"username": "a", "password": "b"})
    assert response.status_code == 503


# --- A write is not tried again, and nothing is written ---------------------------------------------------------

CASE = {"title": "Quota", "description": "Need more EBS", "category": "quota", "severity": "s2"}


@on_postgresql
def test_a_write_whose_connection_was_dropped_is_a_503_and_not_sent_again(api, org, caplog):
    api.get("/api/v1/organizations/")
    _terminate_the_request_connection()
    with caplog.at_level(logging.WARNING, logger="portal.database"):
        response = api.post("/api/v1/support-cases/", CASE, format="json")
    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    assert RETRIED not in caplog.text  # a POST is the client's to send again
    connection.close_if_unusable_or_obsolete()  # what a server does when the request ends
    assert SupportCase.objects.count() == 0
    # Sent again by the client, it succeeds: the 503 was no refusal of the write itself.
    assert api.post("/api/v1/support-cases/", CASE, format="json").status_code == 201
    assert SupportCase.objects.count() == 1


def test_a_write_is_a_503_when_the_database_refuses(api, org, refused, caplog):
    with caplog.at_level(logging.WARNING, logger="portal.database"):
        response = api.post("/api/v1/support-cases/", CASE, format="json")
    assert response.status_code == 503
    assert RETRIED not in caplog.text


# --- Only a lost connection is a 503 ----------------------------------------------------------------------------


@on_postgresql
def test_a_cancelled_statement_or_a_wrong_query_is_not_a_lost_connection():
    with pytest.raises(OperationalError) as cancelled, connection.cursor() as cursor:
        cursor.execute("SET statement_timeout = 1")
        cursor.execute("SELECT pg_sleep(1)")
    assert not connection_lost(cancelled.value)
    connection.close()
    with pytest.raises(ProgrammingError) as wrong, connection.cursor() as cursor:
        cursor.execute("SELECT no_such_column FROM auth_user")
    assert not connection_lost(wrong.value)


def test_a_refused_connection_is_a_lost_one(refused):
    with pytest.raises(OperationalError) as refusal:
        connection.ensure_connection()
    assert connection_lost(refusal.value)
