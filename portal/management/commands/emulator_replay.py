"""`make run`'s AWS emulator keeps its state across restarts: moto records every request it serves to a file
(MOTO_ENABLE_RECORDING, MOTO_RECORDER_FILEPATH) and, at the next start, this command replays what changed state —
clusters, buckets, file systems — so the portal's clusters are still there. The recording is first cut down to those
requests (the minute-by-minute polls would otherwise make it grow without end and the replay slow).

Each request names its account in a header (portal.cloud.session, with AWS_EMULATOR set): the credentials it was
signed with were an assumed role's, which a fresh emulator no longer knows. Names and ARNs come out the same
(HyperPod's are made from the cluster's name); ids moto draws at random (FSx file systems, ParallelCluster's EC2
instances) come out new.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from django.core.management.base import BaseCommand, CommandError

READS = ("Describe", "List", "Get", "Head", "Search", "AssumeRole", "Check")


def changes_state(entry: dict) -> bool:
    """Whether a recorded request changed the emulator's state (the reads and the role assumptions did not)."""
    if entry.get("method", "GET") in ("GET", "HEAD"):
        return False
    headers = {key.lower(): value for key, value in (entry.get("headers") or {}).items()}
    action = headers.get("x-amz-target", "").rpartition(".")[2]  # JSON protocols: SageMaker.CreateCluster
    if not action and not entry.get("body_encoded"):  # query protocols: Action=RunInstances in the body or URL
        fields = parse_qs(entry.get("body") or "") or parse_qs(urlsplit(entry.get("url", "")).query)
        action = (fields.get("Action") or [""])[0]
    return not action.startswith(READS)


class Command(BaseCommand):
    help = "Replay the emulator's recorded state changes into a freshly started emulator (make run does this)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("recording", type=Path, help="The file moto records to (MOTO_RECORDER_FILEPATH).")
        parser.add_argument("--endpoint", required=True, help="The emulator's URL, e.g. http://127.0.0.1:5001")

    def handle(self, *args, recording: Path, endpoint: str, **options) -> None:
        if not recording.exists() or not recording.stat().st_size:
            self.stdout.write("Emulator: nothing recorded yet, it starts empty.")
            return
        entries = [json.loads(line) for line in recording.read_text().splitlines() if line.strip()]
        kept = [entry for entry in entries if changes_state(entry)]
        recording.write_text("".join(json.dumps(entry) + "\n" for entry in kept))
        self.wait_for(endpoint)
        # The emulator replays to the address this request reaches it at, whatever the recording says.
        replay = f"{endpoint.rstrip('/')}/moto-api/recorder/replay-recording"
        try:
            with urllib.request.urlopen(urllib.request.Request(replay, method="POST"), timeout=300):  # noqa: S310
                pass
        except (urllib.error.URLError, OSError) as error:
            raise CommandError(f"The emulator did not replay its recording: {error}") from error
        self.stdout.write(
            f"Emulator: {len(kept)} recorded changes replayed ({len(entries) - len(kept)} reads dropped)."
        )

    def wait_for(self, endpoint: str) -> None:
        for _ in range(60):
            try:
                with urllib.request.urlopen(f"{endpoint.rstrip('/')}/moto-api/", timeout=2):  # noqa: S310
                    return
            except (urllib.error.URLError, OSError):
                time.sleep(0.5)
        raise CommandError(f"The emulator at {endpoint} did not start.")
