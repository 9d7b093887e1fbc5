"""Demo usage on top of `load_demo`: node runs for the weeks of the program so far — most organizations busy, one
idle, one ramping up —, the jobs their reporters posted (busy accelerator-hours), a negotiated P5 rate from the
program's fourth week, what AWS billed, and the rollups.
Idempotent; refuses to run in production. Live emulator clusters add to it as they run."""

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
from workloads.clusters.models import Cluster, ClusterNode
from workloads.jobs.models import Job
from workloads.usage import rollups
from workloads.usage.definitions import cost_micro_usd, split_by_day
from workloads.usage.models import BilledCost, NodeInterval, RateCardEntry
from workloads.usage.rates import load_rates

# How much of its allocation each demo organization runs (by its position in load_demo's list).
PROFILES = [0.92, 0.85, 0.12, 0.78, 0.66, 0.9, 0.55, 0.81, 0.7, 0.88, 0.6, 0.75]
RAMP_UP = {3: 14}  # Aozora Robotics starts two weeks late
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
        orgs = list(allocations.values_list("organization_id", flat=True).distinct().order_by("organization__name"))
        for allocation in allocations.order_by("pk"):
            org = allocation.organization
            index = sorted(orgs).index(org.pk) if org.pk in orgs else 0
            runs += self._runs(allocation, PROFILES[index % len(PROFILES)], RAMP_UP.get(index, 0), now)
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
        self.stdout.write(
            f"Demo usage: {runs} node runs, {billed} billed-cost rows, {days} organization-days rolled up."
        )

    def _runs(self, allocation: Allocation, target: float, late_days: int, now) -> int:
        """Each instance of the allocation alternates runs (about RUN_HOURS) and gaps sized to hit `target`."""
        rng = random.Random(f"{allocation.organization.slug}-{allocation.pk}")  # noqa: S311 - demo data
        cluster, _created = Cluster.objects.get_or_create(
            organization=allocation.organization,
            name=f"{allocation.pool.instance_type.api_name.split('.')[0]}-pretrain-v1",
            defaults={
                "allocation": allocation,
                "region": allocation.pool.region,
                "status": Cluster.Status.DELETED,
                "status_message": "Demo history: replaced by the live demo clusters.",
                "cloud_name": f"fmp-demo-{allocation.pk}",
            },
        )
        start, end = (
            day_start(allocation.starts_on) + timedelta(days=late_days),
            min(now, day_start(allocation.ends_on)),
        )
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
                        ended_at=finish if finish < end else None,
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
                cost_micro_usd=int(total * (1.18 if org_id == over else 1.01)),
                fetched_at=now,
            )
            for (org_id, day, instance_type), total in totals.items()
            if day < timezone.localdate(now)  # Cost Explorer lags a day
        ]
        BilledCost.objects.bulk_create(rows, ignore_conflicts=True, batch_size=2000)
        return len(rows)
