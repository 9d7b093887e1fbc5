"""Training progress where people see it: the workload page (figures, charts with their tables, runs, sources), the
upload page (what was read, refused lines named, bad files refused with nothing kept), the hourly CSV; the same
figure on the page, the API and the CSV; viewers read, outsiders get 404s; a bounded number of queries."""

from __future__ import annotations

import csv
import io
from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from tenants.models import Membership
from tests.factories import MembershipFactory
from tests.training.test_ingest import BATCH, SEQ, megatron_lines, steps
from workloads.training.ingest import record_points
from workloads.training.models import LogSource, ProgressPoint, TrainingRun
from workloads.training.services import run_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def trained(p5_workload):
    """1,000 iterations of 100 s ending now, then a restart from iteration 900."""
    run = run_for(workload=p5_workload, name="main", sequence_length=SEQ)
    start = timezone.now() - timedelta(seconds=100 * 1_100)
    record_points(run=run, points=steps(1, 1000, start=start, seconds=100.0, tflops_per_accelerator=30.0))
    record_points(run=run, points=steps(900, 1000, start=start + timedelta(seconds=100_000), seconds=100.0))
    return run


def test_the_workload_page_shows_progress_against_plan(member_client, p5_workload, trained):
    page = member_client.get(f"/workloads/{p5_workload.pk}/")
    assert page.status_code == 200
    text = page.content.decode()
    assert 'data-testid="training-progress"' in text
    for key in ("training-tokens", "training-loss", "training-mfu"):
        assert f'data-testid="{key}"' in text
    option = page.context["progress_charts"][0].option
    names = [series["name"] for series in option["series"]]
    assert names[0] == "main" and "restart" in names and any(name.startswith("plan ") for name in names)
    progress = page.context["progress"]
    assert progress.tokens == 1000 * BATCH * SEQ
    assert progress.finish.at_risk  # 4.2 B tokens in ~30 h: 2 T tokens take years
    # The MFU on the page is the API's.
    api = member_client.get(f"/api/v1/workloads/{p5_workload.pk}/progress/").json()
    assert api["runs"][0]["achieved_mfu"] == pytest.approx(progress.runs[0].mfu)
    mfu_text = f"{progress.runs[0].mfu * 100:.1f}%"
    assert mfu_text in text


def test_the_hourly_csv_sums_to_the_pages_figures(member_client, p5_workload, trained):
    response = member_client.get(f"/workloads/{p5_workload.pk}/progress.csv")
    assert response.status_code == 200
    rows = list(csv.DictReader(io.StringIO(response.content.decode("utf-8-sig"))))
    figures = member_client.get(f"/workloads/{p5_workload.pk}/").context["progress"].runs[0]
    assert sum(float(row["productive_hours"]) for row in rows) == pytest.approx(figures.productive_hours)
    assert sum(float(row["lost_hours"]) for row in rows) == pytest.approx(figures.lost_hours)
    assert int(rows[-1]["tokens"]) == figures.tokens
    assert sum(int(row["restarts"]) for row in rows) == 1


def test_the_page_reads_a_bounded_number_of_queries(member_client, p5_workload, trained):
    with CaptureQueriesContext(connection) as small:
        member_client.get(f"/workloads/{p5_workload.pk}/")
    run = run_for(workload=p5_workload, name="sft", phase="sft", sequence_length=SEQ)
    record_points(run=run, points=steps(1, 2000, start=timezone.now() - timedelta(days=3), seconds=100.0))
    with CaptureQueriesContext(connection) as large:
        member_client.get(f"/workloads/{p5_workload.pk}/")
    # A second run costs its series' read and no more; its 2,000 points are never read one by one.
    assert len(large) - len(small) <= 2, [q["sql"][:120] for q in large.captured_queries[-10:]]


def test_an_upload_reads_the_log_and_says_what_it_kept(member_client, p5_workload):
    text = megatron_lines(1, 12) + "WARNING: a line of something else\n"
    upload = SimpleUploadedFile("slurm-7.out", text.encode(), content_type="text/plain")
    page = member_client.post(
        f"/workloads/{p5_workload.pk}/progress/upload/", {"log": upload, "run": "main", "sequence_length": 4096}
    )
    assert page.status_code == 200
    outcome = page.context["outcome"]
    assert (outcome.format, outcome.created, outcome.other_lines) == ("megatron", 12, 1)
    assert "12 recorded for the first time" in page.content.decode()
    source = LogSource.objects.get()
    assert (source.kind, source.name, source.lines) == ("upload", "slurm-7.out", 13)


def test_a_bad_upload_is_refused_in_the_page_and_keeps_nothing(member_client, p5_workload):
    url = f"/workloads/{p5_workload.pk}/progress/upload/"
    binary = SimpleUploadedFile("core.bin", b"\x7fELF\x00\x00\x01", content_type="application/octet-stream")
    page = member_client.post(url, {"log": binary, "run": "main"})
    assert page.status_code == 400 and "not a text file" in page.content.decode()
    no_times = megatron_lines(1, 2).replace("[2026-11-20 00:00:01] ", "").replace("[2026-11-20 00:00:02] ", "")
    page = member_client.post(url, {"log": SimpleUploadedFile("a.out", no_times.encode()), "run": "main"})
    assert page.status_code == 400 and "prints no times" in page.content.decode()
    page = member_client.post(url, {"log": SimpleUploadedFile("a.out", b"x\n"), "run": "no spaces"})
    assert page.status_code == 400
    assert not TrainingRun.objects.exists() and not ProgressPoint.objects.exists()


def test_viewers_see_progress_without_the_upload(client, org, p5_workload, trained):
    viewer = MembershipFactory(organization=org, role=Membership.Role.VIEWER).user
    client.force_login(viewer)
    page = client.get(f"/workloads/{p5_workload.pk}/")
    assert page.status_code == 200 and "Upload a training log" not in page.content.decode()
    assert client.get(f"/workloads/{p5_workload.pk}/progress/upload/").status_code == 403
    assert client.get(f"/workloads/{p5_workload.pk}/progress.csv").status_code == 200


def test_outsiders_get_404s(client, outsider, p5_workload, trained):
    client.force_login(outsider)
    for url in ("/progress/upload/", "/progress.csv", "/"):
        assert client.get(f"/workloads/{p5_workload.pk}{url}").status_code == 404


def test_a_workload_without_progress_says_how_to_send_it(member_client, p5_workload):
    text = member_client.get(f"/workloads/{p5_workload.pk}/").content.decode()
    assert "No progress reported yet" in text and "fmp_progress.py" in text
