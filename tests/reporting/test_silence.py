"""A reporter that stops posting is marked silent after three of its intervals, and what it last saw running is
shown as "state unknown", never as running forever; so is a job on a node that is gone. Reporter tokens are
issued and revoked by the organization's operators, and the audit trail keeps both."""

from datetime import timedelta

import pytest
import time_machine
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404
from django.utils import timezone
from rest_framework.test import APIClient

from tenants.models import AuditEvent
from tests.factories import ClusterFactory, ClusterNodeFactory, JobFactory
from tests.jobs.sacct_rows import HEADER, line
from workloads.jobs.models import Job
from workloads.reporting import services
from workloads.reporting.models import ReporterToken

pytestmark = pytest.mark.django_db


@pytest.fixture
def cluster(org):
    cluster = ClusterFactory(organization=org)
    ClusterNodeFactory(cluster=cluster, instance_id="i-0001", hostname="ip-10-1-0-1")
    return cluster


def report(cluster, user, *lines, interval=300):
    client = APIClient()
    client.force_authenticate(user)
    body = {"sacct": "\n".join([HEADER, *lines]) + "\n", "interval_seconds": interval}
    response = client.post(f"/api/v1/clusters/{cluster.pk}/jobs/ingest/", body, format="json")
    assert response.status_code == 200, response.json()


RUNNING = line("77", state="RUNNING", end="Unknown", nodelist="ip-10-1-0-1")


def test_a_reporter_silent_for_three_intervals_is_marked_and_its_running_jobs_become_unknown(cluster, member):
    start = timezone.now()
    with time_machine.travel(start, tick=False):
        report(cluster, member, RUNNING, line("78"))
    with time_machine.travel(start + timedelta(seconds=899), tick=False):
        assert services.check_reporters()["went_silent"] == 0  # 2 intervals and a bit: not yet
    with time_machine.travel(start + timedelta(seconds=901), tick=False):
        assert services.check_reporters()["went_silent"] == 1
        assert services.check_reporters()["went_silent"] == 0  # marked once
    cluster.refresh_from_db()
    assert cluster.reporter_silent_since is not None
    assert Job.objects.get(job_id="77").state_unknown
    assert not Job.objects.get(job_id="78").state_unknown  # finished jobs keep their state
    assert not Job.objects.running().exists()
    # The next report clears both.
    with time_machine.travel(start + timedelta(seconds=1200), tick=False):
        report(cluster, member, RUNNING, line("78"))
    cluster.refresh_from_db()
    assert cluster.reporter_silent_since is None
    assert Job.objects.running().get().job_id == "77"


def test_the_interval_the_reporter_gives_sets_when_it_counts_as_silent(cluster, member):
    start = timezone.now()
    with time_machine.travel(start, tick=False):
        report(cluster, member, RUNNING, interval=3600)
    with time_machine.travel(start + timedelta(hours=2), tick=False):
        assert services.check_reporters()["went_silent"] == 0
    with time_machine.travel(start + timedelta(hours=3, seconds=1), tick=False):
        assert services.check_reporters()["went_silent"] == 1


def test_a_job_on_a_node_that_is_gone_is_shown_unknown(cluster, member):
    report(cluster, member, RUNNING)
    cluster.nodes.update(gone_at=timezone.now())
    assert services.check_reporters()["jobs_on_gone_nodes"] == 1
    assert Job.objects.get().state_unknown
    # A report still listing it RUNNING on the gone node does not make it run again.
    report(cluster, member, RUNNING)
    assert Job.objects.get().state_unknown


def test_a_job_on_a_host_the_portal_does_not_know_is_left_as_reported(cluster, member):
    report(cluster, member, line("79", state="RUNNING", end="Unknown", nodelist="ip-10-9-9-9"))
    services.check_reporters()
    assert not Job.objects.get().state_unknown


def test_a_cluster_that_never_reported_is_never_silent(cluster):
    JobFactory(cluster=cluster, state="RUNNING", ended_at=None, node_list="ip-10-9-9-9")  # posted by no reporter
    with time_machine.travel(timezone.now() + timedelta(days=30), tick=False):
        assert services.check_reporters() == {"went_silent": 0, "jobs_on_gone_nodes": 0}
    cluster.refresh_from_db()
    assert cluster.reporter_silent_since is None


# --- Tokens ---------------------------------------------------------------------------------------------------------


def test_tokens_are_issued_and_revoked_by_operators_and_audited(cluster, member, manager):
    token, key = services.issue_token(user=member, cluster=cluster, name="head node")
    assert key.startswith("fmc_") and token.prefix == key[:12]
    assert ReporterToken.find(key) == token
    assert token.digest != key and key not in str(ReporterToken.objects.values().get())  # only the digest is kept
    services.revoke_token(user=manager, token=token)
    assert ReporterToken.objects.get().revoked_by == manager
    actions = list(AuditEvent.objects.order_by("pk").values_list("action", "actor"))
    assert actions == [("reporter_token.issue", member.pk), ("reporter_token.revoke", manager.pk)]
    issued = AuditEvent.objects.get(action="reporter_token.issue")
    assert issued.change_rows == [("Reporter token", None, f"head node ({token.prefix}…)")]  # named, not "token"


def test_support_engineers_and_outsiders_may_not_issue_tokens(cluster, support, outsider):
    with pytest.raises(PermissionDenied):
        services.issue_token(user=support, cluster=cluster, name="x")
    with pytest.raises(Http404):
        services.issue_token(user=outsider, cluster=cluster, name="x")
    assert not ReporterToken.objects.exists()


def test_a_cluster_holds_at_most_five_active_tokens(cluster, member):
    for n in range(services.MAX_ACTIVE_TOKENS):
        services.issue_token(user=member, cluster=cluster, name=f"t{n}")
    with pytest.raises(ValidationError, match="revoke one first"):
        services.issue_token(user=member, cluster=cluster, name="one too many")


def test_a_deleted_cluster_gets_no_token(cluster, member):
    cluster.status = cluster.Status.DELETED
    cluster.save()
    with pytest.raises(ValidationError, match="deleted"):
        services.issue_token(user=member, cluster=cluster, name="x")
