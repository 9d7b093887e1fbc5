#!/usr/bin/env python3
"""fmp-progress: sends the new lines of a training job's log to the FM Program Portal.

Runs on the head node beside fmp_reporter.py (same folder, same settings file and cluster token),
Python 3.7 or later, standard library only. The portal reads the log as the job prints it:
Megatron-LM / Megatron-Core, Megatron-DeepSpeed, NeMo 2 / Lightning, torchtitan, Hugging Face
Trainer, DeepSpeed and AWS Neuron; the training script changes in nothing.

1. The script, beside fmp_reporter.py, and a folder where it keeps how far it read each log:

sudo install -m 644 fmp_progress.py /opt/fmp-reporter/fmp_progress.py
sudo install -d -o fmp-reporter -m 700 /var/lib/fmp-reporter

2. The workload (its id on the portal) and the logs to follow, in /etc/fmp-reporter/env: a job
   name follows every job of that name that squeue lists (a restarted job is a new job id), a job
   id that job's StdOut, and FMP_PROGRESS_LOGS paths or globs (separated by spaces).

FMP_PROGRESS_WORKLOAD=12
FMP_PROGRESS_JOB_NAME=llama-pretrain

3. Try it, sending nothing, then for real, then every 5 minutes with cron:

sudo -u fmp-reporter python3 /opt/fmp-reporter/fmp_progress.py --dry-run
sudo -u fmp-reporter python3 /opt/fmp-reporter/fmp_progress.py
*/5 * * * * fmp-reporter /usr/bin/python3 /opt/fmp-reporter/fmp_progress.py 2>&1 | logger -t fmp-progress

Only complete lines are sent, up to 8 MB a post. How far each log was read is kept in
/var/lib/fmp-reporter (FMP_STATE_DIR), so a run sends only what is new; the portal also knows how
far it read each log, so a state lost with a replaced node sends nothing twice. A new phase of
training (continued pre-training, SFT) is a new run: --run NAME (FMP_PROGRESS_RUN), default main.
Exit status: 0 sent (or nothing new); 1 refused by the portal; 2 unreachable, or nothing to follow.
"""

from __future__ import annotations

import codecs
import glob
import json
import os
import sys
import time
import zlib

try:  # beside fmp_reporter.py on the head node; inside the portal's package in its tests
    import fmp_reporter
except ImportError:  # pragma: no cover - the portal's own import path
    from workloads.reporting import fmp_reporter

DEFAULT_STATE_DIR = "/var/lib/fmp-reporter"
MAX_CHUNK_BYTES = 8 * 1024 * 1024  # a post; the portal takes up to 20 MB
FORGET_AFTER_SECONDS = 7 * 86400  # a log read to its end and untouched this long is no longer followed
TAIL_BYTES = 4096  # the end of what was read, kept as a checksum: a log written again in place no longer has it
SAME_LENGTH = "fmp-progress-same-length"
# A byte that is not UTF-8 is sent as "?", one byte: the portal counts a source's offset in the UTF-8 bytes of the
# text it gets, which must be the file's (U+FFFD, three bytes, would have it skip the start of the next post).
codecs.register_error(SAME_LENGTH, lambda error: ("?" * (error.end - error.start), error.end))


def progress_body(*, workload, run, log, source, offset, ended_at, options=None) -> dict:
    """A chunk of a training log: its bytes from `offset` in `source`, and when the file was last written."""
    body = {"workload": workload, "run": run, "log": log, "source": source, "offset": offset, "ended_at": ended_at}
    body.update({key: value for key, value in (options or {}).items() if value})
    return body


def text_of(data: bytes) -> str:
    """`data` as text of as many UTF-8 bytes: a byte that is not UTF-8 (a Latin-1 path, a binary dump) is "?", and so
    is a NUL (the portal refuses text holding one, and the log's next lines would never be sent)."""
    return data.decode("utf-8", SAME_LENGTH).replace("\x00", "?")


def complete_lines(data: bytes) -> bytes:
    """The complete lines of `data`: a last line still being written is left for the next run."""
    end = data.rfind(b"\n")
    return data[: end + 1] if end >= 0 else b""


def stdout_path(scontrol: str):
    """StdOut=... from `scontrol show job -o JOBID` (Slurm has expanded %j and the like in it)."""
    for word in scontrol.split():
        if word.startswith("StdOut="):
            return word[len("StdOut=") :] or None
    return None


def load_state(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as handle:
            state = json.load(handle)
    except (OSError, ValueError):
        return {}  # no state (a new node): the portal skips what it has read already
    return state if isinstance(state, dict) else {}


def save_state(path: str, state: dict) -> None:
    """Written whole, then renamed: a run killed mid-write leaves the previous state, never half a file."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    temporary = path + ".tmp"
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump(state, handle, indent=1, sort_keys=True)
    os.replace(temporary, path)


def job_logs(*, job, job_name, log=None) -> list:
    """The StdOut files of a job, or of every job of a name that squeue lists."""
    ids = [job] if job else []
    if job_name:
        listed = fmp_reporter.run_slurm(["squeue", "-h", "-n", job_name, "-o", "%i"], log=log)
        ids += [line.strip() for line in listed.splitlines()]
    paths = []
    for job_id in [i for i in ids if i]:
        path = stdout_path(fmp_reporter.run_slurm(["scontrol", "show", "job", "-o", job_id], log=log))
        if path and path not in paths:
            paths.append(path)
    return paths


def followed(args, state: dict, log=None) -> list:
    """The logs to read: those named (globs expanded), the jobs', and those followed before that changed lately
    (a finished job's last lines)."""
    paths = []
    for pattern in args.logs + (args.log_globs or "").split():
        paths += sorted(glob.glob(pattern)) or ([pattern] if not glob.has_magic(pattern) else [])
    paths += job_logs(job=args.job, job_name=args.job_name, log=log)
    now = time.time()
    paths += [path for path, kept in state.items() if now - kept.get("mtime", 0) < FORGET_AFTER_SECONDS]
    return list(dict.fromkeys(paths))


def tail_sum(handle, offset: int) -> int:
    """A checksum of the bytes just before `offset`, up to TAIL_BYTES."""
    size = min(offset, TAIL_BYTES)
    handle.seek(offset - size)
    return zlib.crc32(handle.read(size))


def start_of(handle, path: str, info, kept: dict) -> tuple:
    """(offset, source) to read the log from: where the last run stopped, or 0 and another source for another file
    at the path (a new job, a rotated log: another inode) or one written again in place (a requeued job's StdOut,
    truncated: the same inode, but shorter than what was read or other bytes before the offset). The portal skips
    what it has read of a source by offset: new text under an old source name would be taken for text it has read."""
    source = "{}#{}".format(path, info.st_ino)
    if kept.get("inode") != info.st_ino:
        return 0, source
    offset = kept.get("offset", 0)
    rewritten = info.st_size < offset or ("tail" in kept and tail_sum(handle, offset) != kept["tail"])
    if rewritten:
        return 0, "{}@{}".format(source, int(info.st_mtime))
    return offset, kept.get("source") or source


def send_log(reporter, args, path: str, state: dict, state_file: str) -> int:
    """Post the new complete lines of one log, chunk by chunk; the posts made."""
    info = os.stat(path)
    ended_at = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(info.st_mtime))
    options = {"sequence_length": args.sequence_length, "log_format": args.log_format, "phase": args.phase}
    posts = 0
    with open(path, "rb") as handle:
        offset, source = start_of(handle, path, info, state.get(path, {}))

        def kept() -> dict:
            return {"inode": info.st_ino, "offset": offset, "mtime": info.st_mtime, "source": source,
                    "tail": tail_sum(handle, offset)}  # fmt: skip

        while offset < info.st_size:
            handle.seek(offset)
            chunk = complete_lines(handle.read(MAX_CHUNK_BYTES))
            if not chunk:
                break  # no complete line yet (or one longer than a chunk: it waits for its end)
            body = progress_body(
                workload=args.workload, run=args.run, log=text_of(chunk), source=source, offset=offset,
                ended_at=ended_at, options=options,
            )  # fmt: skip
            answer = reporter.post("progress/", body)
            offset += len(chunk)
            if answer is None:
                continue  # a dry run keeps nothing
            posts += 1
            state[path] = kept()
            save_state(state_file, state)
            counts = [answer.get(key, "?") for key in ("created", "computed_again", "restarts", "refused_lines")]
            name = os.path.basename(path)
            print("progress: {}: {} new iterations, {} computed again, {} restarts, {} lines refused".format(
                name, *counts))  # fmt: skip
            for problem in answer.get("problems") or []:
                print("fmp-progress: {}: {}".format(name, problem), file=sys.stderr)
        if not args.dry_run and state.get(path) != kept():  # a new log, or one written again with no line yet
            state[path] = kept()
            save_state(state_file, state)
    return posts


def report_progress(reporter, args) -> int:
    if not args.workload:
        raise fmp_reporter.Unavailable("--workload (FMP_PROGRESS_WORKLOAD) is required: the workload's id")
    state_file = os.path.join(args.state_dir, "progress-{}.json".format(args.workload))
    state = load_state(state_file)
    paths = followed(args, state, log=reporter.log)
    if not paths:
        raise fmp_reporter.Unavailable("no log to follow: give paths or globs, --job or --job-name")
    posts, refused = 0, False
    for path in paths:
        try:
            posts += send_log(reporter, args, path, state, state_file)
        except OSError as error:  # one unreadable log must not stop the others
            print("fmp-progress: {}: {}".format(path, error.strerror or error), file=sys.stderr)
        except fmp_reporter.Refused as error:
            if error.status not in (400, 413):
                raise  # a wrong token or cluster: every other log would get the same answer
            # This log's chunk is refused (its message says why): the others still go; it is tried again next run.
            print("fmp-progress: {}: {}".format(path, error), file=sys.stderr)
            refused = True
    if not posts and not args.dry_run and not refused:
        print("progress: nothing new")
    return fmp_reporter.Refused.exit_code if refused else 0


def add_command(commands, option) -> None:
    """The `progress` command, added to fmp_reporter's command line (its settings, token and retries)."""
    sub = commands.add_parser("progress", help="send the new lines of a training job's log")
    positive = fmp_reporter._positive_int
    option(sub, "--workload", "FMP_PROGRESS_WORKLOAD", metavar="ID", type=positive, help="the workload's id")
    option(sub, "--run", "FMP_PROGRESS_RUN", "main", metavar="NAME", help="the run in the workload")
    option(sub, "--job", "FMP_PROGRESS_JOB", metavar="JOBID", help="follow this Slurm job's StdOut")
    option(sub, "--job-name", "FMP_PROGRESS_JOB_NAME", metavar="NAME", help="follow every job of this name")
    option(sub, "--logs", "FMP_PROGRESS_LOGS", dest="log_globs", metavar="GLOBS", help="log paths or globs")
    option(sub, "--state-dir", "FMP_STATE_DIR", DEFAULT_STATE_DIR, metavar="PATH", help="where it stopped")
    option(sub, "--sequence-length", "FMP_PROGRESS_SEQUENCE_LENGTH", metavar="N", type=positive,
           help="tokens per sample, when the log does not print it")  # fmt: skip
    option(sub, "--format", "FMP_PROGRESS_FORMAT", metavar="NAME", dest="log_format",
           help="the log format, when detection should not decide")  # fmt: skip
    option(sub, "--phase", "FMP_PROGRESS_PHASE", metavar="PHASE", help="a new run's phase (pretraining, sft, ...)")
    sub.add_argument("logs", metavar="LOG", nargs="*", help="more log files or globs (quote globs)")
    sub.set_defaults(handler=report_progress)


FLAGS = ("--dry-run", "--verbose")
WITH_VALUE = ("--portal", "--cluster", "--token-file", "--interval", "--timeout", "--ca-file")


def main(argv=None, **kwargs) -> int:
    """fmp_reporter's `progress` command: its own options (portal, cluster, token, dry run) go before the command."""
    words = list(sys.argv[1:] if argv is None else argv)
    before, after = [], []
    while words:
        word = words.pop(0)
        if word in FLAGS or word.split("=", 1)[0] in WITH_VALUE:
            before.append(word)
            if word in WITH_VALUE and words:
                before.append(words.pop(0))
        else:
            after.append(word)
    return fmp_reporter.main(before + ["progress"] + after, extend=add_command, **kwargs)


if __name__ == "__main__":
    sys.exit(main())
