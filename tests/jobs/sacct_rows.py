"""sacct -P rows for tests: one line per job, every field defaulted to a finished one-node P5 job."""

import re
from zoneinfo import ZoneInfo

from workloads.jobs.sacct import SACCT_FIELDS

TOKYO = ZoneInfo("Asia/Tokyo")
HEADER = "|".join(SACCT_FIELDS)
P5_TRES = "billing=192,cpu=192,gres/gpu:h100=8,gres/gpu=8,mem=2000G,node=1"


def line(
    job_id="1001",
    name="pretrain-8b",
    user="alice",
    account="sakura",
    partition="p5",
    state="COMPLETED",
    submit=None,
    start="2026-11-20T09:16:00",
    end="2026-11-20T11:16:00",
    elapsed="7200",
    nnodes="1",
    nodelist="p5-dy-p5-1",
    tres=P5_TRES,
):
    if submit is None:  # submitted at 09:15:02, or when it started if that was earlier (Submit ≤ Start)
        is_time = re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", start)
        submit = min("2026-11-20T09:15:02", start) if is_time else "2026-11-20T09:15:02"
    return "|".join(
        [job_id, name, user, account, partition, state, submit, start, end, elapsed, nnodes, nodelist, tres]
    )
