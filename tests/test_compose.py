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
