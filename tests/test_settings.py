"""The production switch refuses unsafe configuration, in a real interpreter start-up."""

import subprocess
import sys

import pytest
from django.conf import settings

GOOD = {
    "PORTAL_PRODUCTION": "True",
    "SECRET_KEY": "x" * 50,
    "DATABASE_URL": "postgres://portal@db:5432/portal",
    "CELERY_BROKER_URL": "redis://redis:6379/0",
    "ALLOWED_HOSTS": "portal.example",
    "PORTAL_URL": "https://portal.example",
}


def load_settings(env: dict[str, str], show: str = "settings.DEBUG") -> subprocess.CompletedProcess:
    """Start Django in a fresh process with only `env` and print `show`."""
    return subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); from django.conf import settings; print({show})"],
        env={"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "portal.settings", **env},
        cwd=settings.BASE_DIR,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_production_with_safe_configuration_starts_with_debug_off():
    result = load_settings(GOOD)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"SECRET_KEY": ""}, "SECRET_KEY must be set"),
        ({"SECRET_KEY": "short"}, "SECRET_KEY must be set"),
        ({"DATABASE_URL": "sqlite:////tmp/x.sqlite3"}, "DATABASE_URL must point at PostgreSQL"),
        ({"CELERY_BROKER_URL": "filesystem://"}, "CELERY_BROKER_URL must point at Redis"),
        ({"ALLOWED_HOSTS": ""}, "ALLOWED_HOSTS is empty"),
        ({"PORTAL_URL": ""}, "PORTAL_URL must be the address"),
        ({"PORTAL_URL": "portal.example"}, "PORTAL_URL must be the address"),
        ({"DEBUG": "yes"}, "DEBUG must be True or False"),
    ],
)
def test_production_refuses_unsafe_configuration(override, message):
    result = load_settings({**GOOD, **override})
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert message in result.stderr


def test_production_names_every_problem_at_once():
    result = load_settings({"PORTAL_PRODUCTION": "True", "ALLOWED_HOSTS": "x"})
    for message in ("SECRET_KEY", "DATABASE_URL", "CELERY_BROKER_URL", "PORTAL_URL"):
        assert message in result.stderr


def test_embedded_default_is_sqlite_wal_immediate():
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "import django; django.setup(); from django.conf import settings as s; "
            "d = s.DATABASES['default']; print(d['ENGINE'], d['OPTIONS']['transaction_mode'], s.CELERY_BROKER_URL, "
            "s.TIME_ZONE, s.DEBUG)",
        ],
        env={"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "portal.settings", "PORTAL_VAR_DIR": "/tmp/portal-var"},
        cwd=settings.BASE_DIR,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [
        "django.db.backends.sqlite3",
        "IMMEDIATE",
        "filesystem://",
        "Asia/Tokyo",
        "True",
    ]


def test_an_smtp_relay_is_configured_from_the_environment():
    smtp = {
        "EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend",
        "EMAIL_HOST": "smtp.example.jp",
        "EMAIL_PORT": "587",
        "EMAIL_HOST_USER": "portal",
        "EMAIL_HOST_PASSWORD": "s3cret",
        "EMAIL_USE_TLS": "True",
    }
    read = load_settings(smtp, show=f"*(getattr(settings, name) for name in {list(smtp)})")
    assert read.stdout.split() == [*smtp.values()], read.stderr
