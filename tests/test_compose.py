"""docker-compose.yml cannot run here (no Docker engine), so it is checked statically."""

import re
from pathlib import Path

import pytest
import yaml
from django.conf import settings

ROOT = Path(settings.BASE_DIR)


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_services_of_the_production_shape(compose):
    assert set(compose["services"]) == {"postgres", "redis", "web", "worker", "poller", "beat"}


def test_every_long_running_service_but_beat_has_a_health_check(compose):
    for name in ("postgres", "redis", "web", "worker", "poller"):
        assert "test" in compose["services"][name]["healthcheck"], name


def test_portal_services_run_the_right_commands(compose):
    services = compose["services"]
    assert "gunicorn portal.wsgi:application" in services["web"]["command"]
    assert "migrate" in services["web"]["command"]
    assert services["worker"]["command"][:4] == ["celery", "-A", "portal", "worker"]
    assert services["poller"]["command"][:4] == ["celery", "-A", "portal", "worker"]
    assert services["beat"]["command"][:4] == ["celery", "-A", "portal", "beat"]
    for name in ("web", "worker", "poller", "beat"):
        assert services[name]["build"] == "."


def test_portal_environment_is_the_production_switch_and_names_only_real_settings(compose):
    for name in ("web", "worker", "poller", "beat"):
        environment = compose["services"][name]["environment"]
        assert environment["PORTAL_PRODUCTION"] == "True"
        assert environment["DATABASE_URL"].startswith("postgres://")
        assert environment["CELERY_BROKER_URL"].startswith("redis://redis:6379")
        unknown = set(environment) - settings.ENV_NAMES
        assert not unknown, f"{name} sets variables the settings never read: {unknown}"


def test_web_and_workers_wait_for_healthy_services(compose):
    for name in ("web", "worker", "poller"):
        depends = compose["services"][name]["depends_on"]
        assert depends["postgres"]["condition"] == depends["redis"]["condition"] == "service_healthy"


def test_dockerfile_installs_the_pinned_requirements_and_collects_static():
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.1[2-9]", dockerfile, re.M)
    assert "pip install --no-cache-dir -r requirements.txt" in dockerfile
    assert "collectstatic" in dockerfile


def test_health_check_url_exists(compose):
    assert "/healthz" in str(compose["services"]["web"]["healthcheck"]["test"])


def test_every_queue_has_a_worker_whose_health_is_its_heartbeat(compose):
    """Each queue the settings route work to is consumed by a service, restarted whenever it exits, and
    healthy only while it takes that queue's heartbeat."""
    served = {}
    for name, service in compose["services"].items():
        command = service.get("command")
        if isinstance(command, list) and command[:4] == ["celery", "-A", "portal", "worker"]:
            queues = next(arg.split("=", 1)[1] for arg in command if arg.startswith("--queues="))
            for queue in queues.split(","):
                served[queue] = name
            assert service["restart"] == "always", name
            assert service["healthcheck"]["test"] == ["CMD", "python", "manage.py", "workerhealth", f"--queue={queues}"]
    assert set(served) == set(settings.WORKER_QUEUES)
    routed = {route["queue"] for route in settings.CELERY_TASK_ROUTES.values()} | {"celery"}
    assert routed <= set(served)


# The Configuration table (docs/operations/configuration.md) is what a deployer reads to configure production from an
# .env file; compose must
# pass each variable it lists to the portal's services, or setting it does nothing (STAFF_REQUIRE_2FA was listed and
# not passed). Except these, which have no place in production:
NOT_FOR_PRODUCTION = {
    "DEBUG",  # production is DEBUG=False (PORTAL_PRODUCTION); letting an .env turn it on would show tracebacks
    "AWS_EMULATOR",  # `make run`'s local AWS emulator
    "AWS_ENDPOINT_URL",  # the emulator's address; boto3 reads it itself, and an empty value would break every call
    "WHITENOISE_USE_FINDERS",  # development: serve static files from the source folders
    "STATIC_MANIFEST",  # the image's build sets it; production turns it on with PORTAL_PRODUCTION
    "PORTAL_VAR_DIR",  # the image fixes it (/app/var, the folder its volumes mount on)
    "PROMETHEUS_MULTIPROC_DIR",  # the image fixes it too (/app/var/metrics, where compose mounts the metrics volume)
}
# Passed with a value of compose's own, not from the environment: the services compose runs for them.
SET_BY_COMPOSE = {"PORTAL_PRODUCTION", "DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL"}


CONFIGURATION = ROOT / "docs" / "operations" / "configuration.md"


def documented_configuration() -> set[str]:
    """The variables of the operator's guide's Configuration table: every backticked name in a row's first column,
    and the names in its other columns that are settings too (`EMAIL_HOST` under EMAIL_BACKEND's row)."""
    section = CONFIGURATION.read_text(encoding="utf-8")
    names = set()
    for line in section.splitlines():
        if line.startswith("| `"):
            first, *rest = line.strip("|").split("|")
            names |= set(re.findall(r"`([A-Z][A-Z0-9_]+)`", first))
            names |= set(re.findall(r"`([A-Z][A-Z0-9_]+)`", "|".join(rest))) & settings.ENV_NAMES
    return names


def test_compose_passes_every_setting_the_configuration_table_lists(compose):
    listed = documented_configuration()
    assert len(listed) >= 40  # the table was found and read
    assert listed >= NOT_FOR_PRODUCTION, f"an exception {CONFIGURATION.name} no longer lists: drop it here"
    environment = compose["x-portal-env"]
    missing = listed - NOT_FOR_PRODUCTION - set(environment)
    assert not missing, f"docker-compose.yml's x-portal-env does not pass {sorted(missing)}"
    for name in listed - NOT_FOR_PRODUCTION - SET_BY_COMPOSE:
        # ${NAME:-default}, ${NAME:?message} or ${NAME}: an .env file can set it.
        assert str(environment[name]).startswith(f"${{{name}"), f"{name} is fixed in compose: {environment[name]!r}"
    for name in NOT_FOR_PRODUCTION:
        assert name not in environment, name
