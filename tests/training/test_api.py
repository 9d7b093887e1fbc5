"""The progress API: the reporter's chunks to its cluster's endpoint (its own organization's workloads only), a
script's JSON points and a log's text to the workload's endpoint, the summary and its series, and bad input."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from rest_framework.test import APIClient

from tenants.models import Membership
from tests.factories import ClusterFactory, MembershipFactory, WorkloadFactory
from tests.training.test_ingest import BATCH, megatron_lines
from workloads.reporting.services import issue_token
from workloads.training.models import ProgressPoint, TrainingRun

pytestmark = pytest.mark.django_db


@pytest.fixture
def cluster(org, p5_workload):
    return ClusterFactory(organization=org, allocation=p5_workload.allocation, workload=p5_workload)


@pytest.fixture
def reporter(cluster, member):
    _token, key = issue_token(user=member, cluster=cluster, name="head node")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def chunk(workload, text, **fields):
    return {"workload": workload.pk, "log": text, "source": "/fsx/logs/slurm-41.out#9", "offset": 0, **fields}


def test_the_reporter_posts_a_chunk_and_a_resend_changes_nothing(reporter, cluster, p5_workload):
    url = f"/api/v1/clusters/{cluster.pk}/progress/"
    text = megatron_lines(1, 20)
    answer = reporter.post(url, chunk(p5_workload, text, sequence_length=4096), format="json")
    assert answer.status_code == 200, answer.json()
    body = answer.json()
    assert (body["format"], body["created"], body["lines"], body["refused_lines"]) == ("megatron", 20, 20, 0)
    run = TrainingRun.objects.get(workload=p5_workload)
    assert (run.name, run.cluster, run.tokens, run.log_format) == ("main", cluster, 20 * BATCH * 4096, "megatron")
    again = reporter.post(url, chunk(p5_workload, text), format="json").json()
    assert (again["created"], again["already_read_bytes"]) == (0, len(text))
    assert ProgressPoint.objects.count() == 20


def test_the_reporter_posts_plain_text_with_its_fields_in_the_query(reporter, cluster, p5_workload):
    url = f"/api/v1/clusters/{cluster.pk}/progress/?workload={p5_workload.pk}&run=pretrain&sequence_length=4096"
    answer = reporter.post(url, megatron_lines(1, 3), content_type="text/plain")
    assert answer.status_code == 200, answer.json()
    assert TrainingRun.objects.get(workload=p5_workload).name == "pretrain"


def test_a_reporter_token_reaches_only_its_own_organizations_workloads(reporter, cluster, other_org):
    foreign = WorkloadFactory(organization=other_org)
    url = f"/api/v1/clusters/{cluster.pk}/progress/"
    answer = reporter.post(url, chunk(foreign, megatron_lines(1, 3)), format="json")
    assert answer.status_code == 404
    missing = reporter.post(url, {**chunk(foreign, "x\n"), "workload": 999_999}, format="json")
    assert missing.status_code == 404 and missing.json() == answer.json()  # foreign and made-up read the same
    assert not TrainingRun.objects.exists()


def test_another_clusters_endpoint_is_a_404_for_this_token(reporter, org, p5_workload):
    other = ClusterFactory(organization=org, allocation=p5_workload.allocation)
    answer = reporter.post(f"/api/v1/clusters/{other.pk}/progress/", chunk(p5_workload, "x\n"), format="json")
    assert answer.status_code == 404


def test_bad_chunks_are_400s_naming_the_field(reporter, cluster, p5_workload):
    url = f"/api/v1/clusters/{cluster.pk}/progress/"
    for body, field in [
        ({"workload": p5_workload.pk, "log": "x\n", "offset": 5}, "offset"),  # an offset without its source
        ({**chunk(p5_workload, "x\n"), "format": "keras"}, "format"),
        ({**chunk(p5_workload, "x\n"), "run": "../etc"}, "run"),
        ({**chunk(p5_workload, "x\n"), "offset": -1}, "offset"),
        ({**chunk(p5_workload, "x\n"), "colour": "red"}, "colour"),
    ]:
        answer = reporter.post(url, body, format="json")
        assert answer.status_code == 400 and field in answer.json(), (body, answer.json())
    assert not TrainingRun.objects.exists()


@pytest.fixture
def script(member):
    client = APIClient()
    client.force_authenticate(member)
    return client


POINTS = [
    {"iteration": 1, "time": "2026-11-20T00:00:10Z", "tokens_trained": 4_194_304, "loss": 3.2, "step_seconds": 10},
    {"iteration": 2, "time": "2026-11-20T00:00:20Z", "tokens_trained": 8_388_608, "loss": None, "step_seconds": 10},
]


def test_a_script_posts_points_and_reads_the_summary(script, p5_workload):
    url = f"/api/v1/workloads/{p5_workload.pk}/progress/"
    answer = script.post(url, {"run": "pretrain", "points": POINTS}, format="json")
    assert answer.status_code == 200, answer.json()
    assert answer.json()["created"] == 2
    assert script.post(url, {"run": "pretrain", "points": POINTS}, format="json").json()["unchanged"] == 2
    summary = script.get(url + "?points=10").json()
    assert (summary["tokens_trained"], summary["planned_tokens"]) == (8_388_608, 2 * 10**12)
    run = summary["runs"][0]
    assert (run["name"], run["points"], run["last_loss"], run["accelerators"]) == ("pretrain", 2, 3.2, 64)
    # 8,388,608 tokens in 20 s on 64 H100s: 6 × 8e9 × 419,430.4 ÷ (64 × 989e12) = 0.318072.
    assert run["tokens_per_second"] == pytest.approx(419_430.4)
    assert run["achieved_mfu"] == pytest.approx(0.318072, abs=1e-6)
    assert [sample["iteration"] for sample in run["series"]] == [1, 2]
    assert script.get(url + "?points=0").json()["runs"][0]["series"] == []
    assert script.get(url + "?points=1001").status_code == 400


def test_a_script_posts_a_logs_text(script, p5_workload):
    url = f"/api/v1/workloads/{p5_workload.pk}/progress/"
    answer = script.post(url, {"log": megatron_lines(1, 4), "sequence_length": 4096}, format="json")
    assert answer.status_code == 200 and answer.json()["format"] == "megatron", answer.json()


def test_bad_points_are_400s_and_keep_nothing(script, p5_workload):
    url = f"/api/v1/workloads/{p5_workload.pk}/progress/"
    nan = '{"points": [{"iteration": 1, "loss": NaN}]}'
    assert script.post(url, nan, content_type="application/json").status_code == 400
    for body in [
        {"points": []},
        {"points": POINTS, "log": "x"},
        {},
        {"points": [{"iteration": -1}]},
        {"points": [{"iteration": 1, "step_seconds": -2}]},
        {"points": [{"iteration": 1, "wattage": 700}]},
        {"points": POINTS, "sequence_length": 0},
    ]:
        answer = script.post(url, json.dumps(body), content_type="application/json")
        assert answer.status_code == 400, (body, answer.json())
    assert not ProgressPoint.objects.exists()


def test_viewers_read_progress_and_post_none(api_client, org, p5_workload):
    viewer = MembershipFactory(organization=org, role=Membership.Role.VIEWER).user
    api_client.force_authenticate(viewer)
    url = f"/api/v1/workloads/{p5_workload.pk}/progress/"
    assert api_client.get(url).status_code == 200
    assert api_client.post(url, {"points": POINTS}, format="json").status_code == 403
    assert not TrainingRun.objects.exists()


def test_another_organizations_workload_is_a_404(api_client, outsider, p5_workload):
    api_client.force_authenticate(outsider)
    url = f"/api/v1/workloads/{p5_workload.pk}/progress/"
    assert api_client.get(url).status_code == 404
    assert api_client.post(url, {"points": POINTS}, format="json").status_code == 404


def test_the_summary_gives_last_and_this_weeks_goodput(script, p5_workload):
    allocation = p5_workload.allocation
    allocation.starts_on = allocation.starts_on - timedelta(days=30)
    allocation.save()
    url = f"/api/v1/workloads/{p5_workload.pk}/progress/"
    goodput = script.get(url).json()["goodput"]
    assert [set(week) >= {"week", "goodput", "held", "productive", "down", "no_progress"} for week in goodput] == [
        True,
        True,
    ]
    # The allocation is held all of last week and nothing trained: every held hour is down.
    last = goodput[0]
    assert last["held"] == pytest.approx(168) and last["down"] == pytest.approx(168) and last["goodput"] == 0


def test_staff_read_progress_but_post_none_on_either_endpoint(cluster, p5_workload, support):
    client = APIClient()
    client.force_authenticate(support)
    assert client.get(f"/api/v1/workloads/{p5_workload.pk}/progress/").status_code == 200
    answer = client.post(f"/api/v1/clusters/{cluster.pk}/progress/", chunk(p5_workload, "x\n"), format="json")
    assert answer.status_code == 403
    assert (
        client.post(f"/api/v1/workloads/{p5_workload.pk}/progress/", {"points": POINTS}, format="json").status_code
        == 403
    )
    assert not TrainingRun.objects.exists()


def test_a_plain_text_post_names_its_format_in_the_query(reporter, cluster, p5_workload):
    url = f"/api/v1/clusters/{cluster.pk}/progress/?workload={p5_workload.pk}&log_format=torchtitan"
    answer = reporter.post(url, megatron_lines(1, 3), content_type="text/plain")
    assert answer.status_code == 200 and answer.json()["format"] == "torchtitan" and answer.json()["created"] == 0


def test_counts_beyond_any_run_are_refused_lines_not_errors(script, p5_workload):
    url = f"/api/v1/workloads/{p5_workload.pk}/progress/"
    points = [{"iteration": 1, "consumed_samples": 2**62}, {"iteration": 2, "global_batch_size": 2**40}]
    answer = script.post(url, {"points": points, "sequence_length": 10**7}, format="json")
    assert answer.status_code == 200 and answer.json()["refused_lines"] == 2, answer.json()
    for body in [
        {"points": [{"iteration": 1, "step_seconds": 1e300}]},
        {"points": [{"iteration": 1, "time": "1960-01-01T00:00:00Z"}]},
        {"points": [{"iteration": 1, "loss": 1.7e308}]},
        {"points": POINTS, "ended_at": "0001-01-01T00:00:30Z"},
        {"log": megatron_lines(1, 1).replace("1/  500000", "1234567890123456789012345/  500000")},
    ]:
        answer = script.post(url, body, format="json")
        assert answer.status_code in (200, 400), (body, answer.status_code)
        if answer.status_code == 200:
            assert answer.json()["created"] == 0 and answer.json()["refused_lines"] >= 1, answer.json()


def test_a_run_too_slow_to_ever_finish_is_at_risk_not_an_error(script, member_client, p5_workload):
    """A week down then one small step: the plan is not reached within a century; every page still answers."""
    url = f"/api/v1/workloads/{p5_workload.pk}/progress/"
    old = [{"iteration": 1, "time": "2026-10-01T00:00:00Z", "tokens_trained": 1_000_000, "step_seconds": 10}]
    script.post(url, {"points": old}, format="json")
    recent = [{"iteration": 2, "tokens_trained": 1_000_100, "step_seconds": 10}]
    script.post(url, {"points": recent}, format="json")
    finish = script.get(url).json()["finish"]
    assert (finish["on"], finish["at_risk"]) == (None, True)
    assert member_client.get(f"/workloads/{p5_workload.pk}/").status_code == 200
    assert member_client.get(f"/orgs/{p5_workload.organization.slug}/usage/").status_code == 200
