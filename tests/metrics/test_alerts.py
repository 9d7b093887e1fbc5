"""The alert rules shipped in deploy/prometheus/: valid, and each one's unit tests pass (`promtool test rules`).

Skipped where promtool is not installed, never in CI (tests.environment.unavailable): .ci/run installs it.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from django.conf import settings

from tests.environment import unavailable

RULES = Path(settings.BASE_DIR) / "deploy" / "prometheus"


@pytest.fixture
def promtool() -> str:
    found = shutil.which("promtool")
    if not found:
        unavailable("promtool not on PATH: apt-get install prometheus (Debian's package has it)")
    return found


def run(promtool: str, *args: str) -> str:
    done = subprocess.run([promtool, *args], cwd=RULES, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_the_rules_are_valid(promtool):
    assert "SUCCESS" in run(promtool, "check", "rules", "alerts.yml")


def test_every_alert_passes_its_unit_tests(promtool):
    assert "SUCCESS" in run(promtool, "test", "rules", "alerts.test.yml")


def test_every_alert_has_a_test_that_sees_it_fire():
    """A rule without a firing case in alerts.test.yml could be wrong and no test would know."""
    rules = yaml.safe_load((RULES / "alerts.yml").read_text())
    alerts = {rule["alert"] for group in rules["groups"] for rule in group["rules"] if "alert" in rule}
    tests = yaml.safe_load((RULES / "alerts.test.yml").read_text())["tests"]
    fired = {case["alertname"] for test in tests for case in test.get("alert_rule_test", []) if case["exp_alerts"]}
    assert alerts == fired
    wanted = {"PortalMetricsDown", "PortalDatabaseDown", "PortalBrokerDown", "PortalWorkerDown", "PortalAWSFailing"}
    assert wanted | {"PortalClusterStuck", "PortalReportersSilent", "PortalRollupsBehind"} <= alerts
