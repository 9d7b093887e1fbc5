"""Scheduler jobs as a cluster's reporter posts them (Slurm's sacct), one row per job allocation and cluster.

A job row is an accounting record like a node's run interval: its accelerator-time feeds the busy
accelerator-hours of the usage rollups, so it is never deleted with its cluster (PROTECT).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from tenants.models import Organization, TenantQuerySet
from workloads.clusters.models import Cluster
from workloads.jobs.sacct import (
    FROM_ALLOC_TRES,
    FROM_EXCLUSIVE_NODE,
    FROM_NONE,
    HOLDING_STATES,
    MAX_JOB_ID,
    MAX_JOB_NAME,
    MAX_NAME,
)


class JobQuerySet(TenantQuerySet):
    def holding(self) -> JobQuerySet:
        """Jobs the last report saw holding their nodes (running, completing, suspended...)."""
        return self.filter(state__in=HOLDING_STATES)

    def running(self) -> JobQuerySet:
        """Holding their nodes, as far as the portal can tell: not on a silent reporter or a gone node."""
        return self.holding().filter(state_unknown_since=None)


class AcceleratorsSource(models.TextChoices):
    """Where a job's accelerator count came from (workloads.jobs.sacct)."""

    ALLOC_TRES = FROM_ALLOC_TRES, _("AllocTRES names them")
    EXCLUSIVE_NODE = FROM_EXCLUSIVE_NODE, _("whole nodes: an exclusive partition, no gres")
    NONE = FROM_NONE, _("none: no gres on a shared partition")
    PER_NODE = "per_node", _("counted per node (reported before AllocTRES was read)")


class Job(models.Model):
    organization = models.ForeignKey(
        Organization, on_delete=models.PROTECT, related_name="+", verbose_name=_("organization")
    )
    cluster = models.ForeignKey(Cluster, on_delete=models.PROTECT, related_name="jobs", verbose_name=_("cluster"))
    # As sacct prints it: 123, an array task 123_4, a pending array 123_[5-10], a heterogeneous part 123+1.
    job_id = models.CharField(_("job id"), max_length=MAX_JOB_ID)
    # The sizes parse_sacct holds a report to: what it takes, these columns hold.
    name = models.CharField(_("name"), max_length=MAX_JOB_NAME, blank=True)
    user = models.CharField(_("user"), max_length=MAX_NAME, blank=True)
    account = models.CharField(_("account"), max_length=MAX_NAME, blank=True)
    partition = models.CharField(_("partition"), max_length=MAX_NAME, blank=True)
    state = models.CharField(_("state"), max_length=24)
    cancelled_by_uid = models.PositiveBigIntegerField(_("cancelled by uid"), null=True, blank=True)
    submitted_at = models.DateTimeField(_("submitted"), null=True, blank=True)
    started_at = models.DateTimeField(_("started"), null=True, blank=True)
    ended_at = models.DateTimeField(_("ended"), null=True, blank=True)
    elapsed_seconds = models.PositiveBigIntegerField(_("elapsed seconds"), default=0)
    node_count = models.PositiveIntegerField(_("nodes"), default=0)
    node_list = models.TextField(_("node list"), blank=True)  # Slurm's hostlist, e.g. ip-10-1-0-[1-4]
    # The hosts behind the node names, as the reporter's node map said when the job was reported; empty where the
    # names are the hosts (HyperPod). A static ParallelCluster node replaced later keeps its name, not its host.
    hosts = models.JSONField(_("hosts"), default=list, blank=True)
    accelerators = models.PositiveIntegerField(_("accelerators"), default=0)
    accelerator_kind = models.CharField(_("accelerator kind"), max_length=8, blank=True)  # gpu, neuron
    accelerator_type = models.CharField(_("accelerator type"), max_length=32, blank=True)  # h100
    accelerators_source = models.CharField(
        _("accelerators from"), max_length=16, choices=AcceleratorsSource.choices, default=AcceleratorsSource.NONE
    )
    first_reported_at = models.DateTimeField(_("first reported"))
    # The last report that listed the job: a job still holding its nodes counts up to here, never to "now".
    last_reported_at = models.DateTimeField(_("last reported"))
    # Set when the job was last seen holding nodes and the portal can no longer tell (its reporter went
    # silent, or a node it ran on is gone); cleared by the next report that lists it.
    state_unknown_since = models.DateTimeField(_("state unknown since"), null=True, blank=True)

    objects = JobQuerySet.as_manager()

    class Meta:
        ordering = ["-submitted_at", "-pk"]
        verbose_name = _("job")
        verbose_name_plural = _("jobs")
        constraints = [models.UniqueConstraint(fields=["cluster", "job_id"], name="one_row_per_cluster_job")]
        indexes = [
            models.Index(fields=["cluster", "-submitted_at"], name="job_cluster_submitted"),
            models.Index(fields=["cluster", "state"], name="job_cluster_state"),
            # Rollups: jobs ending in the window, then jobs without an end (as for node run intervals).
            models.Index(fields=["organization", "ended_at"], name="job_org_end"),
            # The job list's sortable columns across the program (workloads/jobs/tables.py; tests/test_indexes).
            models.Index(fields=["submitted_at", "id"], name="job_submitted"),
            models.Index(fields=["started_at", "id"], name="job_started"),
            models.Index(fields=["accelerators", "id"], name="job_accelerators"),
            models.Index(fields=["user", "id"], name="job_user"),
        ]

    def __str__(self) -> str:
        return f"{self.job_id} {self.name}"

    @property
    def is_holding(self) -> bool:
        return self.state in HOLDING_STATES

    @property
    def state_unknown(self) -> bool:
        return self.is_holding and self.state_unknown_since is not None

    @property
    def counted_until(self) -> datetime | None:
        """Where the job's accelerator-time ends: its End; while it holds its nodes, the last report that saw it
        (never "now": a silent reporter must not invent busy hours) or, on a node since gone, that node's going; a
        finished job without an End, Start plus ElapsedRaw. None before it starts."""
        if self.started_at is None:
            return None
        if self.ended_at is not None:
            return max(self.ended_at, self.started_at)
        if self.is_holding:
            # A job on a gone node stops where the node did (state_unknown_since is then its going, no later).
            until = min(filter(None, (self.last_reported_at, self.state_unknown_since)))
            return max(until, self.started_at)
        return self.started_at + timedelta(seconds=self.elapsed_seconds)

    @property
    def accelerator_hours(self) -> float:
        until = self.counted_until
        if until is None or not self.accelerators:
            return 0.0
        return (until - self.started_at).total_seconds() / 3600 * self.accelerators

    @property
    def running_for(self) -> timedelta | None:
        if self.started_at is None or not self.is_holding:
            return None
        return timezone.now() - self.started_at
