import pytest
from celery import Celery
from django.db import OperationalError


@pytest.mark.django_db
def test_healthz_is_200_when_database_and_broker_answer(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": "ok", "broker": "ok"}


@pytest.mark.django_db
def test_healthz_is_503_when_the_broker_is_down(client, monkeypatch):
    # Nothing listens on port 1: a real connection attempt fails. (Celery lets the environment's
    # CELERY_BROKER_URL override an app's broker argument, so CI's Redis URL must go first.)
    monkeypatch.delenv("CELERY_BROKER_URL", raising=False)
    monkeypatch.setattr("portal.views.celery_app", Celery("down", broker="redis://127.0.0.1:1/0"))
    response = client.get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "down"
    assert body["database"] == "ok"
    assert body["broker"].startswith("down:")


@pytest.mark.django_db
def test_healthz_is_503_when_the_database_is_down(client, monkeypatch):
    from django.db.backends.utils import CursorWrapper

    def refuse(self, sql, params=None):
        raise OperationalError("connection refused")

    monkeypatch.setattr(CursorWrapper, "execute", refuse)
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["database"] == "down: connection refused"
