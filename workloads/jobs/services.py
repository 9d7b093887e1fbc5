"""Ingesting a cluster's job table (sacct, posted by its reporter or a member's script) and keeping what the
portal shows of running jobs honest.

One report is one transaction: it is parsed whole first (a bad line refuses all of it), then upserted per
(cluster, job id) — posting the same report twice leaves the same rows. Each change marks the organization's
days for the usage rollup, whose busy accelerator-hours are computed from these rows (workloads.jobs.busy).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Min
from django.utils import timezone
from django.utils.translation import gettext as _

from tenants.models import CapacityPool, InstanceType
from workloads.clusters.hosts import HostIndex
from workloads.clusters.models import Cluster, ClusterNode
from workloads.jobs.models import Job
from workloads.jobs.sacct import (
    SacctJob,
    expand_nodelist,
    job_hosts,
    nodelist_size,
    parse_exclusive_partitions,
    parse_sacct,
    parse_sinfo_nodes,
)
from workloads.telemetry_errors import ParseError, field_errors
from workloads.usage.rollups import mark_days

CHUNK = 2_000  # ids per IN (...) list: well under SQLite's 32,766 variables
MIN_INTERVAL, MAX_INTERVAL = 30, 86_400  # seconds between reports, as the reporter says
MAX_REPORTED_NODES = 1_000_000  # node names of all the jobs of one report: bounds the work one request makes

# The columns a report sets, in the order of SacctJob's fields.
REPORTED = (
    "hosts",
    "name",
    "user",
    "account",
    "partition",
    "state",
    "cancelled_by_uid",
    "submitted_at",
    "started_at",
    "ended_at",
    "elapsed_seconds",
    "node_count",
    "node_list",
    "accelerators",
    "accelerator_kind",
    "accelerator_type",
    "accelerators_source",
)


@dataclass(frozen=True)
class IngestResult:
    received: int
    created: int
    updated: int
    unchanged: int


def zone(name: str) -> ZoneInfo:
    """The time zone the report's times are in (sacct prints local times without an offset)."""
    try:
        return ZoneInfo((name or "UTC").strip())
    except (ZoneInfoNotFoundError, ValueError):
        message = _("“%(name)s” is not a time zone, e.g. UTC or Asia/Tokyo.") % {"name": name}
        raise ValidationError({"timezone": message}) from None


def accelerators_per_node(cluster: Cluster) -> int:
    """What one worker holds (8 GPUs on p5, 16 Trainium chips on trn1): a job given whole nodes without gres holds
    this many on each."""
    return cluster.allocation.pool.instance_type.accelerators_per_instance


CLOCK_SKEW = timedelta(minutes=10)  # a head node's clock ahead of ours, at most: NTP keeps EC2 within milliseconds


@dataclass(frozen=True)
class Bounds:
    """What a job of this cluster can be: physics (time runs forward, up to now) and the cluster (its nodes, what
    each holds)."""

    latest: datetime  # now + CLOCK_SKEW: no time of a report lies past it
    nodes: int  # the most nodes a job can have
    accelerators_per_node: int  # the most any of its nodes holds

    @classmethod
    def of(cls, cluster: Cluster, *, now: datetime) -> Bounds:
        groups = list(cluster.groups.values_list("instance_type", "instance_count"))
        types = {kind for kind, _count in groups}
        types |= set(ClusterNode.objects.filter(cluster=cluster).values_list("instance_type", flat=True).distinct())
        per_type = InstanceType.objects.filter(api_name__in=types).values_list("accelerators_per_instance", flat=True)
        # Every node it has listed (replaced ones too), its groups, its allocation: the most it can have had at once.
        counts = (
            ClusterNode.objects.filter(cluster=cluster).count(),
            sum(count for _kind, count in groups),
            cluster.allocation.instance_count,
        )
        return cls(
            latest=now + CLOCK_SKEW,
            nodes=max(counts),
            accelerators_per_node=max([accelerators_per_node(cluster), *per_type]),
        )

    def check(self, job: SacctJob) -> None:
        """Raises ParseError naming the job, its line and the field it cannot have."""
        for column, moment in (("Submit", job.submit), ("Start", job.start), ("End", job.end)):
            if moment is not None and moment > self.latest:
                raise ParseError(job.line_number, f"job {job.job_id}: {column} {moment.isoformat()} is in the future")
        # A pending job's NNodes is what it asks for (Slurm lets it wait on PartitionNodeLimit): only an allocation
        # must fit the cluster.
        if job.node_list and job.node_count > self.nodes:
            raise ParseError(
                job.line_number,
                f"job {job.job_id}: NNodes {job.node_count:,} is more than the cluster's {self.nodes:,}",
            )
        most = max(job.node_count, 1) * self.accelerators_per_node
        if job.accelerators > most:
            raise ParseError(
                job.line_number,
                f"job {job.job_id}: AllocTRES gives {job.accelerators:,} accelerators; {job.node_count:,} node(s) "
                f"of this cluster hold at most {most:,}",
            )


def _columns(job: SacctJob, aliases: dict[str, str]) -> dict:
    return {
        "hosts": hosts_of(job.node_list, aliases),
        "name": job.name,  # within the columns' sizes: parse_sacct refuses longer (MAX_JOB_NAME, MAX_NAME)
        "user": job.user,
        "account": job.account,
        "partition": job.partition,
        "state": job.state,
        "cancelled_by_uid": job.cancelled_by_uid,
        "submitted_at": job.submit,
        "started_at": job.start,
        "ended_at": job.end,
        "elapsed_seconds": job.elapsed_seconds,
        "node_count": job.node_count,
        "node_list": job.node_list,
        "accelerators": job.accelerators,
        "accelerator_kind": job.accelerator_kind or "",
        "accelerator_type": (job.accelerator_type or "")[:32],
        "accelerators_source": job.accelerators_source,
    }


def hosts_of(node_list: str, aliases: dict[str, str]) -> list[str]:
    """The hosts behind a job's node names through the reporter's node map, or [] when the names are the hosts."""
    if not node_list or not aliases:
        return []
    names = expand_nodelist(node_list)
    return [aliases.get(name, name) for name in names] if any(name in aliases for name in names) else []


def first_day(moment: datetime) -> date:
    """The first program day a change from `moment` moves (a report can name a job from years ago: the rollup
    only has days from the first pool on)."""
    earliest = CapacityPool.objects.aggregate(first=Min("starts_on"))["first"]
    day = timezone.localdate(moment)
    return max(day, earliest) if earliest else day


def ingest_sacct(
    *,
    cluster: Cluster,
    text: str,
    timezone_name: str = "UTC",
    slurm_nodes: str = "",
    slurm_partitions: str | None = None,
    interval_seconds: int | None = None,
    now: datetime | None = None,
) -> IngestResult:
    """Upsert the report's jobs; raises ParseError (naming the line) or ValidationError and then writes nothing.

    `slurm_partitions` (`scontrol show partition -o`) says which partitions give whole nodes; without it, what the
    cluster's last one said."""
    if cluster.kind == Cluster.Kind.HYPERPOD_EKS:
        raise ValidationError(_("This is an EKS cluster: Slurm job reports come from Slurm clusters only."))
    if not text.strip():
        raise ValidationError(
            {"sacct": _("The report is empty: sacct prints at least its header line. Was the output cut?")}
        )
    tz = zone(timezone_name)
    with field_errors("slurm_partitions"):
        exclusive = parse_exclusive_partitions(slurm_partitions) if slurm_partitions is not None else None
    now = now or timezone.now()
    with field_errors("sacct"):
        parsed = parse_sacct(
            text,
            tz=tz,
            accelerators_per_node=accelerators_per_node(cluster),
            exclusive_partitions=exclusive if exclusive is not None else frozenset(cluster.slurm_exclusive_partitions),
        )
    named = sum(nodelist_size(job.node_list) for job in parsed if job.node_list)
    if named > MAX_REPORTED_NODES:
        message = _("The report's jobs name %(named)s nodes in all, more than %(max)s: send less at a time.")
        raise ValidationError({"sacct": message % {"named": f"{named:,}", "max": f"{MAX_REPORTED_NODES:,}"}})
    with field_errors("sacct"):
        bounds = Bounds.of(cluster, now=now)
        for job in parsed:
            bounds.check(job)
    with field_errors("slurm_nodes"):
        aliases = parse_sinfo_nodes(slurm_nodes) if slurm_nodes.strip() else None
    if interval_seconds is not None and not MIN_INTERVAL <= interval_seconds <= MAX_INTERVAL:
        raise ValidationError(
            {
                "interval_seconds": _("Between %(low)d and %(high)d seconds.")
                % {"low": MIN_INTERVAL, "high": MAX_INTERVAL}
            }
        )
    with transaction.atomic():
        # One report of a cluster at a time: two reporters (or a retry racing its original) never interleave.
        Cluster.objects.select_for_update().filter(pk=cluster.pk).first()
        known_map = aliases if aliases is not None else (cluster.slurm_nodes or {})
        unknown_since = dict(
            Job.objects.for_org(cluster.organization)
            .filter(cluster=cluster)
            .exclude(state_unknown_since=None)
            .values_list("pk", "state_unknown_since")
        )
        result, first_moved = _upsert(cluster, parsed, now, known_map)
        updates = {"last_report_at": now, "reporter_silent_since": None}
        if interval_seconds is not None:
            updates["report_interval_seconds"] = interval_seconds
        if exclusive is not None:
            updates["slurm_exclusive_partitions"] = sorted(exclusive)
        if aliases is not None:
            updates["slurm_nodes"] = aliases
            cluster.slurm_nodes = aliases
        Cluster.objects.filter(pk=cluster.pk).update(**updates)
        flag_jobs_on_gone_nodes(cluster, now=now)
        # A job still on a gone node stays unknown since it first was, not since this report.
        still = Job.objects.filter(pk__in=list(unknown_since)).exclude(state_unknown_since=None)
        Job.objects.bulk_update(
            [Job(pk=pk, state_unknown_since=min(since, unknown_since[pk])) for pk, since in
             still.values_list("pk", "state_unknown_since")],
            ["state_unknown_since"],
        )  # fmt: skip
        if first_moved is not None:
            mark_days(cluster.organization_id, first_day(first_moved))
    return result


def _upsert(
    cluster: Cluster, parsed: tuple[SacctJob, ...], now: datetime, aliases: dict[str, str]
) -> tuple[IngestResult, datetime | None]:
    existing: dict[str, Job] = {}
    ids = [job.job_id for job in parsed]
    for start in range(0, len(ids), CHUNK):
        rows = Job.objects.for_org(cluster.organization).filter(cluster=cluster, job_id__in=ids[start : start + CHUNK])
        existing.update((row.job_id, row) for row in rows)
    to_create, to_update, unchanged = [], [], []
    moved: list[datetime] = []  # from when each change moves accelerator-time
    for job in parsed:
        columns = _columns(job, aliases)
        row = existing.get(job.job_id)
        if row is None:
            to_create.append(
                Job(
                    organization_id=cluster.organization_id,
                    cluster=cluster,
                    job_id=job.job_id,
                    first_reported_at=now,
                    last_reported_at=now,
                    **columns,
                )
            )
            if job.start is not None and job.accelerators:
                moved.append(job.start)
            continue
        if row.is_holding and row.started_at is not None:
            moved.append(row.counted_until)  # a running job's time grows from where the last report left it
        if all(getattr(row, name) == value for name, value in columns.items()):
            unchanged.append(row.pk)
            continue
        moved.extend(t for t in (row.started_at, job.start, row.counted_until) if t is not None)
        for name, value in columns.items():
            setattr(row, name, value)
        row.last_reported_at, row.state_unknown_since = now, None
        to_update.append(row)
    Job.objects.bulk_create(to_create, batch_size=1_000)
    Job.objects.bulk_update(to_update, [*REPORTED, "last_reported_at", "state_unknown_since"], batch_size=500)
    for start in range(0, len(unchanged), CHUNK):
        Job.objects.filter(pk__in=unchanged[start : start + CHUNK]).update(
            last_reported_at=now, state_unknown_since=None
        )
    result = IngestResult(
        received=len(parsed), created=len(to_create), updated=len(to_update), unchanged=len(unchanged)
    )
    return result, min(moved, default=None)


def flag_jobs_unknown(cluster: Cluster, *, now: datetime) -> int:
    """The cluster's reporter went silent: what it last saw holding nodes may have ended since."""
    return (
        Job.objects.for_org(cluster.organization)
        .filter(cluster=cluster, state_unknown_since=None)
        .holding()
        .update(state_unknown_since=now)
    )


def flag_jobs_on_gone_nodes(cluster: Cluster, *, now: datetime) -> int:
    """Jobs still shown holding a node that the cloud no longer lists cannot be running there: unknown since the
    first of their nodes went (no later than now), where their accelerator-time stops (Job.counted_until)."""
    org = cluster.organization_id
    jobs = list(
        Job.objects.filter(organization_id=org, cluster=cluster, state_unknown_since=None)
        .holding()
        .exclude(node_list="")
        .only("pk", "node_list", "hosts")
    )
    if not jobs:
        return 0
    index = HostIndex(
        ClusterNode.objects.filter(organization_id=org, cluster=cluster), {cluster.pk: cluster.slurm_nodes or {}}
    )
    stale = []
    for job in jobs:
        gone = [
            nodes[-1].gone_at
            for name in job_hosts(job.node_list, job.hosts)
            if (nodes := index.nodes(cluster.pk, name, mapped=not job.hosts)) and nodes[-1].gone_at is not None
        ]
        if gone:
            stale.append(Job(pk=job.pk, state_unknown_since=min([now, *gone])))
    Job.objects.bulk_update(stale, ["state_unknown_since"], batch_size=500)
    return len(stale)
