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
        ({"CACHE_URL": "locmem://"}, "CACHE_URL must point at Redis"),
        ({"CACHE_URL": "memcached://x"}, "CACHE_URL must be redis://"),
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
        "filesystem://localhost/",  # a host named: kombu warns on every connection without one
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


def test_check_deploy_finds_nothing_to_warn_about_under_the_production_settings():
    """The production variables (docs/operations/configuration.md) pass `manage.py check --deploy`: HSTS, the
    HTTPS redirect and secure cookies come on with PORTAL_PRODUCTION (no W004, W008, …)."""
    env = {**GOOD, "SECRET_KEY": "q7Vd0-Zk3wLr9Tf2pXa8Hn5yBc1Ue6Gs4Jm0Qo7Ri3Kv9Wt2Ly5Nb8"}
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        env={"PATH": "/usr/bin:/bin", **env},
        cwd=settings.BASE_DIR,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


def test_security_headers_come_from_the_environment():
    shown = "settings.SECURE_SSL_REDIRECT, settings.SECURE_HSTS_SECONDS, settings.SECURE_PROXY_SSL_HEADER"
    production = load_settings(GOOD, show=shown)
    assert production.stdout.split() == ["True", "31536000", "('HTTP_X_FORWARDED_PROTO',", "'https')"], (
        production.stderr
    )
    no_proxy = load_settings({**GOOD, "SECURE_HSTS_SECONDS": "3600", "BEHIND_TLS_PROXY": "False"}, show=shown)
    assert no_proxy.stdout.split() == ["True", "3600", "None"], no_proxy.stderr
    bad = load_settings({**GOOD, "SECURE_HSTS_SECONDS": "a year"})
    assert "SECURE_HSTS_SECONDS must be a whole number" in bad.stderr


@pytest.mark.django_db
def test_the_https_redirect_spares_the_containers_health_check(client, settings):
    settings.SECURE_SSL_REDIRECT = True
    assert client.get("/login/").status_code == 301
    assert client.get("/healthz").status_code in (200, 503)


def test_production_web_processes_share_one_cache_on_redis():
    """The API's per-minute budgets (portal/throttling.py) count across gunicorn's processes only on a shared cache."""
    result = load_settings(GOOD, show="settings.CACHES['default']['BACKEND'], settings.CACHES['default']['LOCATION']")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "portal.cache.ForgivingRedisCache redis://redis:6379/0"
    own = load_settings({**GOOD, "CACHE_URL": "redis://cache:6379/2"}, show="settings.CACHES['default']['LOCATION']")
    assert own.stdout.strip() == "redis://cache:6379/2"
