"""fmp_progress.py, the reporter's `progress` command: old-Python syntax, stdlib only, whole runs against a stub
HTTP server (new complete lines only, its state file, replaced and rewritten logs, Slurm jobs' StdOut), and whole
runs against the real portal (pytest's live server): the points land once, whatever the state file says.

The script runs as a subprocess, as cron would run it, with the reporter test's head node (fake Slurm on PATH).
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.factories import ClusterFactory, WorkloadFactory
from tests.reporting.test_reporter_script import (
    CLUSTER,
    TOKEN,
    fake,
    node,  # noqa: F401 (fixture)
    old_python,
    portal,  # noqa: F401 (fixture)
)
from tests.training.conftest import p5_workload  # noqa: F401 (fixture)
from workloads.reporting import fmp_progress, fmp_reporter
from workloads.reporting.services import issue_token
from workloads.training.models import LogSource, ProgressPoint, TrainingRun

PROGRESS = Path(fmp_progress.__file__)
WORKLOAD = "12"
SAMPLE = Path(__file__).parent.parent / "samples" / "training" / "megatron_core_moe_ling_mini_v2.log"
WRITTEN = datetime(2026, 11, 27, 9, 15, 2, tzinfo=UTC)  # the logs' modification time


def answer(created: int = 2, **fields) -> tuple[int, dict]:
    """The portal's 200 to a progress post (ProgressOutcome)."""
    body = {"format": "megatron", "lines": created, "points": created, "created": created, "computed_again": 0}
    body.update(unchanged=0, restarts=0, implausible=0, other_lines=0, refused_lines=0, problems=[])
    body.update(already_read_bytes=0, **fields)
    return 200, body


def progress(node, *args, python=sys.executable, script=PROGRESS, **env) -> subprocess.CompletedProcess:  # noqa: F811
    """The script on the head node, its state in node.dir/state, for workload 12 unless env says otherwise."""
    env = {"FMP_STATE_DIR": str(node.dir / "state"), "FMP_PROGRESS_WORKLOAD": WORKLOAD, **env}
    return subprocess.run(
        [python, str(script), *args], env={**node.env, **env}, capture_output=True, text=True, timeout=60
    )


def write_log(path: Path, data: bytes, *, mode: str = "wb", at: datetime = WRITTEN) -> Path:
    with open(path, mode) as handle:
        handle.write(data)
    os.utime(path, (at.timestamp(), at.timestamp()))
    return path


def state_of(node, workload: str = WORKLOAD) -> dict:  # noqa: F811
    return json.loads((node.dir / "state" / f"progress-{workload}.json").read_text())


def sources(portal) -> list[str]:  # noqa: F811
    return [request["body"]["source"] for request in portal.requests]


# -- The source itself ---------------------------------------------------------------------------------------


def test_the_script_is_python_37_syntax_and_imports_only_the_standard_library_and_the_reporter():
    tree = ast.parse(PROGRESS.read_text(), feature_version=(3, 7))
    fallbacks = set()  # imports in `except ImportError:`: the portal's own import path
    for item in ast.walk(tree):
        if isinstance(item, ast.Try):
            for handler in item.handlers:
                if isinstance(handler.type, ast.Name) and handler.type.id == "ImportError":
                    fallbacks |= {id(inner) for statement in handler.body for inner in ast.walk(statement)}
    imported, fallen_back = set(), []
    for item in ast.walk(tree):
        if isinstance(item, ast.ImportFrom) and id(item) in fallbacks:
            fallen_back.append((item.module, [alias.name for alias in item.names]))
        elif isinstance(item, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in item.names}
        elif isinstance(item, ast.ImportFrom):
            assert item.level == 0, "a relative import would tie the script to the portal's package"
            imported.add(item.module.split(".")[0])
    assert "fmp_reporter" in imported and "json" in imported, "the check is not looking"
    assert imported - {"fmp_reporter"} <= sys.stdlib_module_names, imported - sys.stdlib_module_names
    assert fallen_back == [("workloads.reporting", ["fmp_reporter"])]


def test_the_install_guide_holds_the_lines_to_copy():
    guide = fmp_progress.__doc__.splitlines()
    for line in [
        "sudo install -m 644 fmp_progress.py /opt/fmp-reporter/fmp_progress.py",
        "FMP_PROGRESS_WORKLOAD=12",
        "sudo -u fmp-reporter python3 /opt/fmp-reporter/fmp_progress.py --dry-run",
        "*/5 * * * * fmp-reporter /usr/bin/python3 /opt/fmp-reporter/fmp_progress.py 2>&1 | logger -t fmp-progress",
    ]:
        assert line in guide, line
    assert fmp_progress.DEFAULT_STATE_DIR in fmp_progress.__doc__


# -- Pure pieces ---------------------------------------------------------------------------------------------


def test_only_complete_lines_are_taken():
    assert fmp_progress.complete_lines(b"a\nb\nhalf") == b"a\nb\n"
    assert fmp_progress.complete_lines(b"a\n") == b"a\n"
    assert fmp_progress.complete_lines(b"no newline yet") == b""


def test_the_stdout_path_is_read_from_scontrol():
    line = "JobId=41 JobName=llama UserId=alice(1001) StdErr=/fsx/logs/llama-41.err StdOut=/fsx/logs/llama-41.out\n"
    assert fmp_progress.stdout_path(line) == "/fsx/logs/llama-41.out"
    assert fmp_progress.stdout_path("JobId=41 StdOut= StdIn=/dev/null") is None
    assert fmp_progress.stdout_path("slurm_load_jobs error: Invalid job id specified") is None


def test_the_reporters_options_are_moved_before_the_command(monkeypatch):
    monkeypatch.setattr(fmp_progress.fmp_reporter, "main", lambda argv, **kwargs: argv)
    argv = ["--workload", "3", "--portal", "https://p", "a.log", "--cluster=7", "--dry-run", "--run", "sft", "b.log"]
    assert fmp_progress.main(argv) == [
        "--portal", "https://p", "--cluster=7", "--dry-run", "progress", "--workload", "3", "a.log", "--run", "sft",
        "b.log",
    ]  # fmt: skip


# -- Whole runs against a stub portal -----------------------------------------------------------------------


def test_new_complete_lines_are_posted_once_from_where_the_last_run_stopped(node, portal):  # noqa: F811
    log = write_log(node.dir / "slurm-41.out", b"line one\nline two\nline thr")
    inode = log.stat().st_ino
    portal.replies = [answer(2), answer(2)]
    first = progress(node, str(log))
    assert first.returncode == 0, first.stderr
    assert first.stdout == "progress: slurm-41.out: 2 new iterations, 0 computed again, 0 restarts, 0 lines refused\n"
    [request] = portal.requests
    assert request["path"] == f"/api/v1/clusters/{CLUSTER}/progress/"
    assert request["headers"]["Authorization"] == "Token " + TOKEN
    assert request["body"] == {
        "workload": 12,
        "run": "main",
        "log": "line one\nline two\n",  # the line being written waits for its end
        "source": f"{log}#{inode}",
        "offset": 0,
        "ended_at": "2026-11-27T09:15:02+00:00",
    }
    kept = state_of(node)[str(log)]
    assert (kept["inode"], kept["offset"], kept["mtime"]) == (inode, len(b"line one\nline two\n"), WRITTEN.timestamp())
    # Nothing new: nothing sent.
    again = progress(node, str(log))
    assert again.returncode == 0, again.stderr
    assert again.stdout == "progress: nothing new\n" and len(portal.requests) == 1
    # The last line ends, and another follows: only the new bytes, from where the last post stopped.
    later = datetime(2026, 11, 27, 9, 20, tzinfo=UTC)
    write_log(log, b"ee\nline four\n", mode="ab", at=later)
    third = progress(node, str(log))
    assert third.returncode == 0, third.stderr
    assert portal.requests[1]["body"] == {
        "workload": 12,
        "run": "main",
        "log": "line three\nline four\n",
        "source": f"{log}#{inode}",
        "offset": len(b"line one\nline two\n"),
        "ended_at": "2026-11-27T09:20:00+00:00",
    }
    assert state_of(node)[str(log)]["offset"] == log.stat().st_size


def test_the_run_format_phase_and_sequence_length_are_sent_when_given(node, portal):  # noqa: F811
    log = write_log(node.dir / "train.log", b"step 1\n")
    portal.replies = [answer(1)]
    result = progress(node, str(log), "--run", "sft-1", "--phase", "sft", FMP_PROGRESS_SEQUENCE_LENGTH="4096")
    assert result.returncode == 0, result.stderr
    body = portal.requests[0]["body"]
    assert (body["run"], body["phase"], body["sequence_length"], "log_format" in body) == ("sft-1", "sft", 4096, False)
    write_log(log, b"step 2\n", mode="ab")
    assert progress(node, str(log), "--format", "megatron", FMP_PROGRESS_RUN="cpt").returncode == 0
    body = portal.requests[1]["body"]
    assert (body["run"], body["log_format"], "phase" in body, "sequence_length" in body) == (
        "cpt",
        "megatron",
        False,
        False,
    )


def test_a_file_replaced_at_the_same_path_is_read_from_its_start_as_another_source(node, portal):  # noqa: F811
    log = write_log(node.dir / "train.log", b"old 1\nold 2\nold 3\n")
    assert progress(node, str(log)).returncode == 0
    replacement = write_log(node.dir / "train.log.new", b"new 1\nnew 2\nnew 3\nnew 4\n")
    os.replace(replacement, log)  # created while the old one existed: another inode
    result = progress(node, str(log))
    assert result.returncode == 0, result.stderr
    body = portal.requests[1]["body"]
    assert (body["offset"], body["log"]) == (0, "new 1\nnew 2\nnew 3\nnew 4\n")
    assert body["source"] == f"{log}#{log.stat().st_ino}" != portal.requests[0]["body"]["source"]
    assert state_of(node)[str(log)]["offset"] == log.stat().st_size


def test_a_truncated_file_is_read_from_its_start_as_another_source(node, portal):  # noqa: F811
    """A requeued job's StdOut is truncated and written again (same inode): the portal, which skips by offset
    within a source, must not take its new lines for lines it has read."""
    log = write_log(node.dir / "slurm-41.out", b"attempt 1, line 1\nattempt 1, line 2\n")
    inode = log.stat().st_ino
    assert progress(node, str(log)).returncode == 0
    write_log(log, b"attempt 2\n", at=datetime(2026, 11, 27, 10, 0, tzinfo=UTC))  # O_TRUNC: the same inode
    assert log.stat().st_ino == inode
    result = progress(node, str(log))
    assert result.returncode == 0, result.stderr
    first, second = (request["body"] for request in portal.requests)
    assert (second["offset"], second["log"]) == (0, "attempt 2\n")
    assert second["source"] != first["source"] and second["source"].startswith(f"{log}#{inode}")
    # The next lines follow on in that new source.
    write_log(log, b"attempt 2, line 2\n", mode="ab")
    assert progress(node, str(log)).returncode == 0
    third = portal.requests[2]["body"]
    assert (third["source"], third["offset"], third["log"]) == (second["source"], 10, "attempt 2, line 2\n")


def test_a_file_written_again_past_where_it_was_read_is_read_from_its_start(node, portal):  # noqa: F811
    """Truncated, then written beyond the old offset before the next run (a job that failed early, requeued):
    what lies before the offset is no longer what was read."""
    log = write_log(node.dir / "slurm-41.out", b"attempt 1: started\n")
    assert progress(node, str(log)).returncode == 0
    write_log(log, b"attempt 2: started, with a longer first line\nattempt 2: iteration 1\n")
    assert progress(node, str(log)).returncode == 0
    first, second = (request["body"] for request in portal.requests)
    assert (second["offset"], second["log"].splitlines()[0]) == (0, "attempt 2: started, with a longer first line")
    assert second["source"] != first["source"]


def test_offsets_count_the_files_bytes_when_a_line_is_not_utf8(node, portal):  # noqa: F811
    """The portal counts a source's offset in the UTF-8 bytes of the text it got: a byte that is not UTF-8 must be
    sent as one byte, or the portal would skip the start of the next post."""
    log = write_log(node.dir / "train.log", "café\n".encode() + b"\xff\xfe latin-1 caf\xe9\n")
    assert progress(node, str(log)).returncode == 0
    sent = portal.requests[0]["body"]["log"]
    assert sent.startswith("café\n") and len(sent.encode()) == log.stat().st_size
    write_log(log, b"next\n", mode="ab")
    assert progress(node, str(log)).returncode == 0
    assert portal.requests[1]["body"]["offset"] == len(sent.encode())


def test_the_logs_of_every_job_of_a_name_are_followed(node, portal):  # noqa: F811
    now = datetime.now(tz=UTC)  # logs written lately: followed from the state once squeue no longer lists the job
    logs = {job: write_log(node.dir / f"llama-{job}.out", f"job {job}\n".encode(), at=now) for job in ("101", "102_3")}
    fake(node.bin / "squeue", f'printf "%s\\n" "$@" > {node.dir}/squeue.args\nprintf "101\\n102_3\\n"')
    fake(
        node.bin / "scontrol",
        f'echo "$@" >> {node.dir}/scontrol.args\n'
        f'echo "JobId=$4 JobName=llama-pretrain StdErr={node.dir}/llama-$4.out StdOut={node.dir}/llama-$4.out"',
    )
    portal.replies = [answer(1), answer(1)]
    result = progress(node, "--job-name", "llama-pretrain")
    assert result.returncode == 0, result.stderr
    assert sorted(sources(portal)) == sorted(f"{path}#{path.stat().st_ino}" for path in logs.values())
    assert sorted(request["body"]["log"] for request in portal.requests) == ["job 101\n", "job 102_3\n"]
    assert (node.dir / "squeue.args").read_text().splitlines() == ["-h", "-n", "llama-pretrain", "-o", "%i"]
    assert (node.dir / "scontrol.args").read_text().splitlines() == ["show job -o 101", "show job -o 102_3"]
    # A job that has ended (squeue no longer lists it) still has its last lines sent: its log is in the state.
    fake(node.bin / "squeue", "true")
    write_log(logs["101"], b"job 101, the end\n", mode="ab", at=now)
    assert progress(node, "--job-name", "llama-pretrain").returncode == 0
    assert portal.requests[2]["body"]["log"] == "job 101, the end\n"


def test_one_job_is_followed_by_its_id(node, portal):  # noqa: F811
    log = write_log(node.dir / "slurm-55.out", b"iteration 1\n")
    fake(node.bin / "scontrol", f'echo "JobId=$4 StdOut={log}"')
    result = progress(node, FMP_PROGRESS_JOB="55")
    assert result.returncode == 0, result.stderr
    assert sources(portal) == [f"{log}#{log.stat().st_ino}"]


def test_globs_from_the_settings_and_the_command_line_are_followed(node, portal):  # noqa: F811
    logs = node.dir / "logs"
    logs.mkdir()
    for name in ("b.log", "a.log", "c.err", "d.out"):
        write_log(logs / name, name.encode() + b"\n")
    more = write_log(node.dir / "more.txt", b"more\n")
    result = progress(node, str(more), str(logs / "*.out"), FMP_PROGRESS_LOGS=f"{logs}/*.log {logs}/none-*.log")
    assert result.returncode == 0, result.stderr
    posted = [request["body"]["log"] for request in portal.requests]
    assert posted == ["more\n", "d.out\n", "a.log\n", "b.log\n"]  # the command line's first, each glob sorted


def test_a_missing_workload_exits_2_saying_so(node, portal):  # noqa: F811
    log = write_log(node.dir / "train.log", b"x\n")
    result = progress(node, str(log), FMP_PROGRESS_WORKLOAD="")
    assert result.returncode == 2
    assert "--workload (FMP_PROGRESS_WORKLOAD) is required" in result.stderr
    assert portal.requests == []


def test_no_log_to_follow_exits_2(node, portal):  # noqa: F811
    result = progress(node, str(node.dir / "logs" / "*.out"))  # a glob that matches nothing
    assert result.returncode == 2
    assert "no log to follow" in result.stderr and portal.requests == []
    assert progress(node).returncode == 2


def test_dry_run_prints_the_request_and_sends_and_keeps_nothing(node, portal):  # noqa: F811
    log = write_log(node.dir / "train.log", b"line one\nline two\nhal")
    result = progress(node, "--dry-run", str(log))
    assert result.returncode == 0, result.stderr
    assert portal.requests == []
    assert f"POST {portal.url}/api/v1/clusters/{CLUSTER}/progress/" in result.stdout
    assert "  log: 2 lines\n    line one\n    line two\n" in result.stdout
    assert f'  source: "{log}#{log.stat().st_ino}"\n  offset: 0\n' in result.stdout
    assert "nothing new" not in result.stdout and "SECRETPART" not in result.stdout
    assert not (node.dir / "state").exists()


def test_a_refusal_exits_1_with_the_portals_message_and_keeps_the_offset(node, portal):  # noqa: F811
    log = write_log(node.dir / "train.log", b"step 1\n")
    portal.replies = [(400, {"log": ["This log prints no times."]})]
    result = progress(node, str(log))
    assert result.returncode == 1
    assert "refused by the portal (HTTP 400): log: This log prints no times." in result.stderr
    assert len(portal.requests) == 1  # never retried
    assert not (node.dir / "state" / f"progress-{WORKLOAD}.json").exists()  # the next run sends it again


def test_lines_the_portal_refused_are_named_on_stderr(node, portal):  # noqa: F811
    log = write_log(node.dir / "train.log", b"a\nb\nc\n")
    problem = "line 3: the step time is negative (-2.0 s)"
    portal.replies = [answer(2, refused_lines=1, problems=[problem])]
    result = progress(node, str(log))
    assert result.returncode == 0, result.stderr
    assert result.stdout == "progress: train.log: 2 new iterations, 0 computed again, 0 restarts, 1 lines refused\n"
    assert result.stderr == f"fmp-progress: train.log: {problem}\n"


def test_the_reporters_options_work_after_the_script_name(node, portal):  # noqa: F811
    log = write_log(node.dir / "train.log", b"a\n")
    result = progress(
        node, "--portal", portal.url, "--cluster", "8", "--dry-run", str(log), FMP_PORTAL_URL="", FMP_CLUSTER_ID=""
    )
    assert result.returncode == 0, result.stderr
    assert f"POST {portal.url}/api/v1/clusters/8/progress/" in result.stdout and portal.requests == []
    mixed = progress(node, "--workload", "13", f"--portal={portal.url}", str(log), "--cluster", "9", FMP_PORTAL_URL="")
    assert mixed.returncode == 0, mixed.stderr
    [request] = portal.requests
    assert (request["path"], request["body"]["workload"]) == ("/api/v1/clusters/9/progress/", 13)
    assert state_of(node, "13")[str(log)]["offset"] == 2


def test_it_runs_beside_the_reporter_alone_under_the_python_of_amazon_linux_2(node, portal, tmp_path):  # noqa: F811
    python = old_python()
    opt = tmp_path / "opt"
    opt.mkdir()
    for path in (PROGRESS, Path(fmp_reporter.__file__)):
        shutil.copy(path, opt / path.name)
    log = write_log(node.dir / "train.log", "é\n".encode() + b"\xff\nhal")
    portal.replies = [answer(1)]
    result = progress(node, str(log), python=python, script=opt / "fmp_progress.py", PYTHONPATH="")
    assert result.returncode == 0, result.stderr
    assert portal.requests[0]["body"]["log"] == "é\n?\n"
    assert progress(node, str(log), python=python, script=opt / "fmp_progress.py").stdout == "progress: nothing new\n"


# -- Whole runs against the portal ---------------------------------------------------------------------------


@pytest.fixture
def cluster(org, p5_workload):  # noqa: F811
    return ClusterFactory(organization=org, allocation=p5_workload.allocation, workload=p5_workload)


def live_progress(head: Path, live_server, cluster_id: int, key: str, *args: str) -> subprocess.CompletedProcess:
    token = head / "token"
    token.write_text(key + "\n")
    token.chmod(0o600)
    env = {k: v for k, v in os.environ.items() if not k.startswith("FMP_") and "proxy" not in k.lower()}
    env.update(FMP_ENV_FILE=str(head / "no-env-file"), FMP_RETRY_BASE_SECONDS="0.01", FMP_STATE_DIR=str(head / "state"))
    command = [sys.executable, str(PROGRESS), "--portal", live_server.url, "--cluster", str(cluster_id)]
    command += ["--token-file", str(token), *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.django_db(transaction=True)
def test_a_log_lands_once_whatever_the_state_says(live_server, tmp_path, cluster, p5_workload, member):  # noqa: F811
    _token, key = issue_token(user=member, cluster=cluster, name="head node")
    sample = SAMPLE.read_bytes()
    lines = sample.splitlines(keepends=True)
    assert len(lines) == 11 and sample.endswith(b"\n")
    cut = len(b"".join(lines[:7])) + 40  # iterations 1 to 6, the memory report, and the start of iteration 7's line
    log = tmp_path / "slurm-4242.out"
    log.write_bytes(sample[:cut])
    workload = ["--workload", str(p5_workload.pk), "--run", "ling-cpt", str(log)]
    first = live_progress(tmp_path, live_server, cluster.pk, key, *workload)
    assert first.returncode == 0, first.stderr
    assert first.stdout == "progress: slurm-4242.out: 6 new iterations, 0 computed again, 0 restarts, 0 lines refused\n"
    run = TrainingRun.objects.get(workload=p5_workload)
    assert (run.name, run.cluster, run.log_format) == ("ling-cpt", cluster, "megatron")
    assert sorted(ProgressPoint.objects.filter(run=run).values_list("iteration", flat=True)) == list(range(1, 7))
    # The job prints on: the rest of iteration 7's line and iterations 8 to 10.
    with open(log, "ab") as handle:
        handle.write(sample[cut:])
    second = live_progress(tmp_path, live_server, cluster.pk, key, *workload)
    assert second.returncode == 0, second.stderr
    assert "4 new iterations" in second.stdout
    assert sorted(ProgressPoint.objects.filter(run=run).values_list("iteration", flat=True)) == list(range(1, 11))
    # Nothing new: nothing sent.
    third = live_progress(tmp_path, live_server, cluster.pk, key, *workload)
    assert (third.returncode, third.stdout) == (0, "progress: nothing new\n"), third.stderr
    # The state is lost (a replaced head node): the whole log is sent again, and the portal skips what it read.
    shutil.rmtree(tmp_path / "state")
    fourth = live_progress(tmp_path, live_server, cluster.pk, key, *workload)
    assert fourth.returncode == 0, fourth.stderr
    assert fourth.stdout.startswith("progress: slurm-4242.out: 0 new iterations, 0 computed again, 0 restarts")
    assert ProgressPoint.objects.count() == 10 and TrainingRun.objects.count() == 1
    source = LogSource.objects.get(run=run)
    assert (source.name, source.next_offset, source.lines) == (f"{log}#{log.stat().st_ino}", len(sample), 11)


@pytest.mark.django_db(transaction=True)
def test_bytes_not_utf8_lose_nothing_of_the_next(live_server, tmp_path, cluster, p5_workload, member):  # noqa: F811
    _token, key = issue_token(user=member, cluster=cluster, name="head node")
    lines = SAMPLE.read_bytes().splitlines(keepends=True)
    log = tmp_path / "train.log"
    log.write_bytes(b"".join(lines[:5]) + b"NCCL WARN " + b"\xff" * 300 + b"\n")  # iterations 1 to 4
    workload = ["--workload", str(p5_workload.pk), str(log)]
    assert live_progress(tmp_path, live_server, cluster.pk, key, *workload).returncode == 0
    with open(log, "ab") as handle:
        handle.write(b"".join(lines[5:]))  # iterations 5 to 10
    result = live_progress(tmp_path, live_server, cluster.pk, key, *workload)
    assert result.returncode == 0, result.stderr
    assert sorted(ProgressPoint.objects.values_list("iteration", flat=True)) == list(range(1, 11))
    assert LogSource.objects.get().next_offset == log.stat().st_size


@pytest.mark.django_db(transaction=True)
def test_another_organizations_workload_is_refused_and_nothing_lands(live_server, tmp_path, cluster, other_org, member):
    _token, key = issue_token(user=member, cluster=cluster, name="head node")
    foreign = WorkloadFactory(organization=other_org)
    log = tmp_path / "train.log"
    log.write_bytes(SAMPLE.read_bytes())
    result = live_progress(tmp_path, live_server, cluster.pk, key, "--workload", str(foreign.pk), str(log))
    assert result.returncode == 1
    assert "HTTP 404" in result.stderr and "No such workload." in result.stderr
    assert not TrainingRun.objects.exists() and not ProgressPoint.objects.exists()
    assert not (tmp_path / "state" / f"progress-{foreign.pk}.json").exists()
