"""Demo usage on top of `load_demo`: each organization's story over the weeks of the program so far — most busy,
one idle, one ramping up late, one still running after its allocation ended —, told by one cluster per
organization: its node runs, the jobs its reporter posted (busy accelerator-hours), a negotiated P5 rate from the
program's fourth week, what AWS billed, and the rollups.

The cluster is the organization's live one: `load_demo_telemetry` brings it up in the emulator once that is
running, with as many nodes as the story says run now, and the poller carries the history on from there. The
history's last runs end when this command runs; from then on the live nodes count.
Idempotent; refuses to run in production."""

from __future__ import annotations

import random
from datetime import timedelta
from decimal import Decimal

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.utils import timezone

from portal.periods import day_start
from tenants.models import Allocation, InstanceType, Program
from workloads.clusters.models import Cluster, ClusterInstanceGroup, ClusterNode, OrgCloudSettings
from workloads.clusters.services import CONTROLLER_TYPES, cloud_name_for, worker_group_name
from workloads.jobs.models import Job
from workloads.usage import rollups, summaries
from workloads.usage.definitions import cost_micro_usd, micro_usd_to_the_cent, split_by_day
from workloads.usage.models import BilledCost, NodeInterval, RateCardEntry
from workloads.usage.rates import load_rates

# How much of its allocation each demo organization runs (by its position in load_demo's list): in its history and
# in the emulator now (that share of the allocation's instances, at least one).
PROFILES = [0.92, 0.85, 0.12, 0.78, 0.66, 0.9, 0.55, 0.81, 0.7, 0.88, 0.6, 0.75]
RAMP_UP = {3: 14}  # Aozora Robotics starts two weeks late
# Minato Finance Models (load_demo ends its allocation early) keeps its cluster running after the allocation's end:
# what it runs from then on is over-allocation.
OVER_RUN = {6}
BILLED, OVER_BILLED = Decimal("1.01"), Decimal("1.18")  # what Cost Explorer bills against the computed cost


def usd_of(micro_usd: int) -> Decimal:
    return Decimal(micro_usd) / 1_000_000


def story_cluster_name(api_name: str) -> str:
    """The organization's one demo cluster: p5-pretrain, trn1-pretrain."""
    return f"{api_name.split('.')[0]}-pretrain"


def live_nodes(allocation: Allocation) -> int:
    """How many instances the organization's live cluster runs, as its story says."""
    index = story_index(allocation.organization)
    return max(1, round(allocation.instance_count * PROFILES[index % len(PROFILES)]))


def story_index(org) -> int:
    """The organization's place in load_demo's list (its primary key order)."""
    ids = list(
        Allocation.objects.filter(pool__program__slug="fm-program-demo", request__isnull=False)
        .values_list("organization_id", flat=True)
        .distinct()
        .order_by("organization_id")
    )
    return ids.index(org.pk) if org.pk in ids else 0


def story_cluster(allocation: Allocation) -> Cluster:
    """The organization's demo cluster on the allocation, made as the cluster form makes one (requested, its worker
    group sized by the story, HyperPod's controller), for `load_demo_telemetry` to bring up in the emulator."""
    org = allocation.organization
    api_name = allocation.pool.instance_type.api_name
    name = story_cluster_name(api_name)
    existing = Cluster.objects.for_org(org).live().filter(name=name).first()
    if existing is not None:
        return existing
    cloud = OrgCloudSettings.objects.for_org(org).first()
    cluster = Cluster.objects.create(
        organization=org,
        allocation=allocation,
        name=name,
        kind=Cluster.Kind.HYPERPOD_SLURM,
        region=allocation.pool.region,
        status=Cluster.Status.REQUESTED,
        lifecycle_s3_uri=cloud.lifecycle_s3_uri if cloud else "",
        execution_role_arn=cloud.execution_role_arn if cloud else "",
        subnet_ids=list(cloud.subnet_ids) if cloud else [],
        security_group_ids=list(cloud.security_group_ids) if cloud else [],
        ssh_key_name=cloud.ssh_key_name if cloud else "",
    )
    cluster.cloud_name = cloud_name_for(cluster_id=cluster.pk, name=name, attempt=1)
    cluster.save(update_fields=["cloud_name"])
    controller_group, controller_type = CONTROLLER_TYPES[Cluster.Kind.HYPERPOD_SLURM]
    ClusterInstanceGroup.objects.bulk_create(
        [
            ClusterInstanceGroup(organization=org, cluster=cluster, name=controller_group,
                                 instance_type=controller_type, role=ClusterInstanceGroup.Role.CONTROLLER,
                                 instance_count=1),
            ClusterInstanceGroup(organization=org, cluster=cluster, name=worker_group_name(api_name),
                                 instance_type=api_name, role=ClusterInstanceGroup.Role.WORKER,
                                 instance_count=live_nodes(allocation)),
        ]
    )  # fmt: skip
    return cluster


RUN_HOURS = 30  # a node runs about this long between restarts
USERS = ["aiko", "kenji", "mei", "ryo", "sora"]


class Command(BaseCommand):
    help = "Node runs, a rate change, billed costs and the usage rollups for the demo program (idempotent)."

    @transaction.atomic
    def handle(self, *args, **options) -> None:
        if settings.PRODUCTION:
            raise CommandError("Refusing to load demo usage with PORTAL_PRODUCTION=True.")
        program = Program.objects.filter(slug="fm-program-demo").first()
        if program is None:
            raise CommandError("Load the demo program first: manage.py load_demo")
        if NodeInterval.objects.filter(instance_id__startswith="i-demo").exists():
            self.stdout.write("Demo usage already present.")
            return
        now = timezone.now()
        runs = 0
        allocations = Allocation.objects.filter(pool__program=program, request__isnull=False).select_related(
            "organization", "pool__instance_type"
        )
        for allocation in allocations.order_by("pk"):
            index = story_index(allocation.organization)
            profile = PROFILES[index % len(PROFILES)]
            runs += self._runs(allocation, profile, RAMP_UP.get(index, 0), now, index in OVER_RUN)
        p5 = InstanceType.objects.get(api_name="p5.48xlarge")
        RateCardEntry.objects.get_or_create(
            instance_type=p5,
            region="us-east-1",
            kind=RateCardEntry.Kind.NEGOTIATED,
            effective_from=program.starts_on + timedelta(days=21),
            defaults={"usd_per_hour": Decimal("48.00"), "note": "Demo: the program's negotiated P5 rate."},
        )
        billed = self._billed(program, now)
        rollups.mark_everything()
        days = rollups.roll_up()
        with transaction.atomic():  # the billed days' weeks summed for every organization, as a billing fetch ends
            summaries.lock()
            summaries.refresh(BilledCost.objects.values_list("day", flat=True).distinct())
        self.stdout.write(
            f"Demo usage: {runs} node runs, {billed} billed-cost rows, {days} organization-days rolled up."
        )

    def _runs(self, allocation: Allocation, target: float, late_days: int, now, over_run: bool) -> int:
        """Each instance of the allocation alternates runs (about RUN_HOURS) and gaps sized to hit `target`, on the
        organization's cluster, up to now (or the allocation's end, unless the story runs beyond it). Every run is
        closed: from now on the cluster's live nodes in the emulator count."""
        rng = random.Random(f"{allocation.organization.slug}-{allocation.pk}")  # noqa: S311 - demo data
        cluster = story_cluster(allocation)
        start = day_start(allocation.starts_on) + timedelta(days=late_days)
        end = now if over_run else min(now, day_start(allocation.ends_on + timedelta(days=1)))
        gap_hours = RUN_HOURS * (1 - target) / target
        rows = []
        for slot in range(allocation.instance_count):
            moment = start + timedelta(hours=rng.uniform(0, 6))
            number = 0
            while moment < end:
                length = timedelta(hours=max(1.0, rng.expovariate(1 / RUN_HOURS)))
                finish = min(moment + length, end)
                rows.append(
                    NodeInterval(
                        organization=allocation.organization,
                        cluster=cluster,
                        instance_id=f"i-demo-{allocation.pk}-{slot}-{number}",
                        instance_type=allocation.pool.instance_type.api_name,
                        region=allocation.pool.region,
                        started_at=moment,
                        ended_at=finish,
                        last_seen_at=finish,
                    )
                )
                number += 1
                moment = finish + timedelta(hours=rng.expovariate(1 / gap_hours) if gap_hours else 0)
        NodeInterval.objects.bulk_create(rows, batch_size=2000)
        self._jobs(cluster, rows, rng, target)
        return len(rows)

    def _jobs(self, cluster: Cluster, runs: list[NodeInterval], rng: random.Random, target: float) -> None:
        """What the cluster's reporter would have posted: each run a node (one per instance id, its slot's host
        name) and a job holding its GPUs for most of it — less of it where the organization is less busy."""
        per_instance = InstanceType.objects.get(api_name=runs[0].instance_type).accelerators_per_instance if runs else 0
        nodes, jobs = [], []
        for run in runs:
            _prefix, _demo, allocation_id, slot, number = run.instance_id.split("-")
            host = f"ip-10-{int(allocation_id) % 250}-{int(slot) // 250}-{int(slot) % 250 + 1}"
            gone = run.ended_at
            node = ClusterNode(organization=cluster.organization, cluster=cluster, instance_id=run.instance_id,
                               hostname=host, group_name="workers", instance_type=run.instance_type,
                               status="Running", launch_time=run.started_at, first_seen_at=run.started_at,
                               last_seen_at=run.last_seen_at, gone_at=gone or run.last_seen_at)  # fmt: skip
            nodes.append(node)
            length = run.last_seen_at - run.started_at
            start = run.started_at + length * rng.uniform(0.02, 0.1)
            end = start + length * min(0.95, rng.uniform(0.6, 1.0) * (0.5 + target / 2))
            jobs.append(
                Job(
                    organization=cluster.organization,
                    cluster=cluster,
                    job_id=f"{allocation_id}{int(slot):03d}{int(number):04d}",
                    name=rng.choice(["pretrain", "pretrain-resume", "eval", "sft"]),
                    user=rng.choice(USERS),
                    account=cluster.organization.slug[:64],
                    partition="train",
                    state="COMPLETED",
                    submitted_at=start,
                    started_at=start,
                    ended_at=end,
                    elapsed_seconds=int((end - start).total_seconds()),
                    node_count=1,
                    node_list=host,
                    accelerators=per_instance,
                    accelerator_kind="gpu" if per_instance == 8 else "neuron",
                    first_reported_at=end,
                    last_reported_at=end,
                )  # fmt: skip
            )
        ClusterNode.objects.bulk_create(nodes, batch_size=2000)
        by_instance = {node.instance_id: node for node in nodes}
        for run in runs:
            run.node = by_instance[run.instance_id]
        NodeInterval.objects.bulk_update(runs, ["node"], batch_size=2000)
        Job.objects.bulk_create(jobs, batch_size=2000)

    def _billed(self, program: Program, now) -> int:
        """What Cost Explorer would report: the running cost at the rate, give or take; one org billed 18% more."""
        rates = load_rates()
        totals: dict = {}
        for interval in NodeInterval.objects.filter(instance_id__startswith="i-demo").iterator():
            type_id = InstanceType.objects.only("pk").get(api_name=interval.instance_type).pk
            for day, part in split_by_day(interval.started_at, interval.counted_until).items():
                usd = rates.rate(type_id, interval.region, day).usd_per_hour
                key = (interval.organization_id, day, interval.instance_type)
                totals[key] = totals.get(key, 0) + cost_micro_usd(part, usd)
        over = min((org_id for org_id, _day, _type in totals), default=None)
        rows = [
            BilledCost(
                organization_id=org_id,
                day=day,
                instance_type=instance_type,
                cost_micro_usd=micro_usd_to_the_cent(usd_of(total) * (OVER_BILLED if org_id == over else BILLED)),
                fetched_at=now,
            )
            for (org_id, day, instance_type), total in totals.items()
            if day < timezone.localdate(now)  # Cost Explorer lags a day
        ]
        BilledCost.objects.bulk_create(rows, ignore_conflicts=True, batch_size=2000)
        return len(rows)
