"""Demo workload records, support cases and a weekly review on top of `load_demo`. Idempotent.

Everything is written through the services (workloads.records, .support, .review), as a person would, so the
demo has real history, case events and (console) emails. Refuses to run in production.
"""

from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from portal.periods import this_week
from tenants.models import Allocation, Organization
from workloads.models import ReviewMeeting, SupportCase, Workload
from workloads.records.services import create_workload, update_workload
from workloads.review.services import add_action_item, save_review_meeting
from workloads.support.services import add_comment, open_case

# (org slug, tenant user, name, model, architecture, params B, active B, tokens B, framework, TP, PP, DP, EP,
#  cluster type, storage, status)
WORKLOADS = [
    (
        "sakura-lab",
        "tenant1",
        "sakura-70b-pretrain",
        "Sakura-LM 70B",
        "dense",
        70,
        None,
        15000,
        "megatron",
        8,
        4,
        8,
        1,
        "hyperpod_slurm",
        "fsx_lustre_s3",
        "running",
    ),
    (
        "sakura-lab",
        "tenant1",
        "sakura-70b-sft",
        "Sakura-LM 70B Instruct",
        "dense",
        70,
        None,
        20,
        "pytorch_fsdp",
        1,
        1,
        32,
        1,
        "hyperpod_slurm",
        "fsx_lustre_s3",
        "planned",
    ),
    (
        "kitsune-ai",
        "tenant2",
        "kitsune-moe-pretrain",
        "Kitsune-MoE 235B-A22B",
        "moe",
        235,
        22,
        12000,
        "megatron",
        4,
        4,
        8,
        8,
        "parallelcluster_slurm",
        "fsx_lustre_s3",
        "running",
    ),
    (
        "kitsune-ai",
        "tenant2",
        "kitsune-rl",
        "Kitsune-MoE RL",
        "moe",
        235,
        22,
        None,
        "verl",
        4,
        1,
        16,
        8,
        "hyperpod_eks",
        "s3_only",
        "paused",
    ),
]
CASES = [
    (
        "sakura-lab",
        "tenant1",
        "NCCL all_reduce hangs on 32 nodes",
        "networking",
        "s2",
        "Job 4121 stalls after ~20 minutes; NCCL_DEBUG=INFO shows EFA timeouts on two hosts.",
        "Two hosts have a degraded EFA device; we are replacing them. Please resubmit after 15:00.",
        "Third EFA fault for this org this month: raise with the account team.",
    ),
    (
        "kitsune-ai",
        "tenant2",
        "Checkpoint writes stall FSx",
        "storage",
        "s3",
        "Checkpointing 470 GB every 30 minutes takes 9 minutes and throughput drops to 200 MB/s.",
        "",
        "",
    ),
]


class Command(BaseCommand):
    help = "Add demo workloads, support cases and a weekly review to the demo program (idempotent)."

    @transaction.atomic
    def handle(self, *args, **options) -> None:
        if settings.PRODUCTION:
            raise CommandError("Refusing to load demo data with PORTAL_PRODUCTION=True.")
        users = {
            u.username: u
            for u in get_user_model().objects.filter(username__in=["tenant1", "tenant2", "support", "manager"])
        }
        orgs = {o.slug: o for o in Organization.objects.filter(slug__in=["sakura-lab", "kitsune-ai"])}
        if len(users) < 4 or len(orgs) < 2:
            raise CommandError("Load the demo program first: manage.py load_demo")
        created = {"workloads": 0, "cases": 0}

        for (
            slug,
            username,
            name,
            model,
            arch,
            params,
            active,
            tokens,
            framework,
            tp,
            pp,
            dp,
            ep,
            cluster,
            storage,
            status,
        ) in WORKLOADS:
            org = orgs[slug]
            if Workload.objects.for_org(org).filter(name=name).exists():
                continue
            allocation = Allocation.objects.for_org(org).exclude(status=Allocation.Status.REVOKED).first()
            data = {
                "name": name,
                "phase": "pretraining" if "pretrain" in name else "rl" if "rl" in name else "sft",
                "status": "planned",
                "model_name": model,
                "architecture": arch,
                "parameter_count": params * 10**9,
                "active_parameter_count": active * 10**9 if active else None,
                "target_tokens": tokens * 10**9 if tokens else None,
                "framework": framework,
                "tensor_parallel": tp,
                "pipeline_parallel": pp,
                "data_parallel": dp,
                "expert_parallel": ep,
                "cluster_type": cluster,
                "storage": storage,
                "allocation": allocation,
                "notes": "",
            }
            workload = create_workload(user=users[username], organization=org, data=data)
            if status != "planned":  # a second edit, so the history shows a change
                update_workload(user=users[username], workload=workload, data={"status": status})
            created["workloads"] += 1

        for slug, username, title, category, severity, description, reply, note in CASES:
            org = orgs[slug]
            if SupportCase.objects.for_org(org).filter(title=title).exists():
                continue
            case = open_case(
                user=users[username],
                organization=org,
                title=title,
                description=description,
                category=category,
                severity=severity,
                workload=Workload.objects.for_org(org).order_by("pk").first(),
            )
            if reply:
                add_comment(user=users["support"], case=case, body=reply)
            if note:
                add_comment(user=users["support"], case=case, body=note, internal=True)
            created["cases"] += 1

        last_week = this_week() - timedelta(days=7)
        new_meeting = not ReviewMeeting.objects.filter(week_start=last_week).exists()
        if new_meeting:
            meeting, _created = save_review_meeting(
                user=users["manager"],
                week_start=last_week,
                attendees=[users["manager"], users["support"]],
                minutes="Sakura: EFA faults on two hosts, replacement under way. Kitsune: checkpoint throughput.",
            )
            add_action_item(
                user=users["manager"],
                meeting=meeting,
                organization=orgs["kitsune-ai"],
                owner=users["support"],
                text="Size FSx throughput for Kitsune's checkpoint cadence",
                case=SupportCase.objects.for_org(orgs["kitsune-ai"]).order_by("pk").first(),
            )
        self.stdout.write(
            f"Demo workloads: {created['workloads']} workloads and {created['cases']} cases added"
            f"{', last week review recorded' if new_meeting else ''}."
        )
