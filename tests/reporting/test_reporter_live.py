"""The reporter script against the real portal (pytest's live server): it posts with its cluster's token, the jobs
land; with another cluster's token it is refused with the portal's message and nothing lands."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.factories import ClusterFactory, ClusterNodeFactory, MembershipFactory
from tests.reporting.test_reporter_script import SCRIPT, SINFO_OUTPUT, fake
from workloads.jobs.models import Job
from workloads.jobs.sacct import SACCT_FIELDS
from workloads.reporting.services import issue_token, revoke_token
from workloads.validation.models import NcclValidation

pytestmark = pytest.mark.django_db(transaction=True)

SAMPLES = Path(__file__).parent.parent / "samples"
SACCT = "\n".join(
    [
        "|".join(SACCT_FIELDS),
        "501|pretrain-70b|alice|lab|p5|RUNNING|2026-11-24T01:00:00|2026-11-24T01:01:00|Unknown|3600|2|ip-10-1-0-[1-2]"
        "|billing=384,cpu=384,gres/gpu:h100=16,gres/gpu=16,node=2",
        "502_1|sweep|bob|lab|p5|COMPLETED|2026-11-24T00:00:00|2026-11-24T00:00:05|2026-11-24T00:30:05|1800|1"
        "|ip-10-1-0-1|gres/gpu=8",
        "502_2|sweep|bob|lab|p5|CANCELLED by 1001|2026-11-24T00:00:00|2026-11-24T00:00:05|2026-11-24T00:10:05|600|1"
        "|ip-10-1-0-2|gres/gpu=8",
        "",
    ]
)


@pytest.fixture
def cluster(org, catalog):
    cluster = ClusterFactory(organization=org, name="p5-train")
    for n in (1, 2):
        ClusterNodeFactory(cluster=cluster, instance_id=f"i-000{n}", hostname=f"ip-10-1-0-{n}")
    return cluster


@pytest.fixture
def head_node(tmp_path):
    """Fake Slurm commands on PATH (sacct insists on TZ=UTC, as the script must set it)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (tmp_path / "sacct.out").write_text(SACCT)
    (tmp_path / "sinfo.out").write_text(SINFO_OUTPUT)
    fake(bin_dir / "sacct", f'[ "$TZ" = UTC ] || exit 1\ncat {tmp_path}/sacct.out')
    fake(bin_dir / "sinfo", f"cat {tmp_path}/sinfo.out")
    return tmp_path


def reporter(head_node: Path, live_server, cluster_id: int, key: str, *args: str) -> subprocess.CompletedProcess:
    token = head_node / "token"
    token.write_text(key + "\n")
    token.chmod(0o600)
    env = {k: v for k, v in os.environ.items() if not k.startswith("FMP_") and "proxy" not in k.lower()}
    env.update(
        PATH=f"{head_node / 'bin'}{os.pathsep}{env.get('PATH', os.defpath)}",
        FMP_ENV_FILE=str(head_node / "no-env-file"),
        FMP_RETRY_BASE_SECONDS="0.01",
    )
    command = [sys.executable, str(SCRIPT), "--portal", live_server.url, "--cluster", str(cluster_id)]
    command += ["--token-file", str(token), "--interval", "300", *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)


def test_the_reporter_posts_jobs_with_its_clusters_token(live_server, head_node, cluster, member):
    _token, key = issue_token(user=member, cluster=cluster, name="head node")
    result = reporter(head_node, live_server, cluster.pk, key, "jobs")
    assert result.returncode == 0, result.stderr
    assert "3 received, 3 new" in result.stdout
    jobs = {job.job_id: job for job in Job.objects.filter(cluster=cluster)}
    assert set(jobs) == {"501", "502_1", "502_2"}
    assert (jobs["501"].state, jobs["501"].accelerators) == ("RUNNING", 16)
    assert (jobs["502_2"].state, jobs["502_2"].cancelled_by_uid) == ("CANCELLED", 1001)
    cluster.refresh_from_db()
    assert cluster.last_report_at is not None and cluster.report_interval_seconds == 300
    # Run again, as the timer does: the same rows.
    again = reporter(head_node, live_server, cluster.pk, key, "jobs")
    assert again.returncode == 0 and "3 unchanged" in again.stdout
    assert Job.objects.count() == 3


def test_another_clusters_token_is_refused_and_nothing_lands(live_server, head_node, cluster, org, member):
    other = ClusterFactory(organization=org)
    _token, key = issue_token(user=member, cluster=other, name="head node of the other cluster")
    result = reporter(head_node, live_server, cluster.pk, key, "jobs")
    assert result.returncode == 1
    assert "404" in result.stderr and "No such cluster" in result.stderr
    assert not Job.objects.exists()


def test_a_revoked_token_is_refused_saying_so(live_server, head_node, cluster, member):
    token, key = issue_token(user=member, cluster=cluster, name="old")
    revoke_token(user=member, token=token)
    result = reporter(head_node, live_server, cluster.pk, key, "jobs")
    assert result.returncode == 1 and "revoked" in result.stderr
    assert not Job.objects.exists()


def test_the_reporter_posts_an_nccl_log(live_server, head_node, cluster):
    _token, key = issue_token(user=MembershipFactory(organization=cluster.organization).user, cluster=cluster, name="h")
    log = (SAMPLES / "nccl_all_reduce_p5_2node.txt").read_text()
    srun_run = head_node / "nccl.log"
    srun_run.write_text(log[: log.index("# --- (B)")])
    result = reporter(head_node, live_server, cluster.pk, key, "nccl", str(srun_run), "--nodes", "2")
    assert result.returncode == 0, result.stderr
    assert NcclValidation.objects.get(cluster=cluster).verdict == "passed"
