"""Demo outcomes on top of `load_demo_training`: milestones from the funding agreements (Sakura's and Kitsune's
pre-training measured on their workloads' tokens, a release reported and waiting for confirmation), deliverables (a
model release, its evaluation, a technical report), the program's budget and each demo organization's, with the
alerts they stand past, and last month's report of the program. Written through the services, as a person would;
idempotent; refuses production."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from portal.periods import today
from tenants.models import Membership, Organization, Program
from workloads.outcomes import alerts, services
from workloads.outcomes.models import Budget, Milestone
from workloads.outcomes.reports import services as reports
from workloads.records.models import Workload

# (organization, budget in yen)
BUDGETS = [("sakura-lab", "1800000000"), ("kitsune-ai", "420000000"), ("hokuto", "900000000")]


class Command(BaseCommand):
    help = "Load demo milestones, deliverables and budgets for the demo organizations. Idempotent."

    def handle(self, *args, **options) -> None:
        if settings.PRODUCTION:
            raise CommandError("Refusing to load demo data with PORTAL_PRODUCTION=True.")
        program = Program.objects.filter(slug="fm-program-demo").first()
        manager = get_user_model().objects.filter(username="manager").first()
        if program is None or manager is None:
            raise CommandError("Load the demo first: manage.py load_demo")
        if Milestone.objects.exists():
            self.stdout.write("Demo outcomes: already loaded.")
            return
        day = today()
        services.set_budget(user=manager, program=program, organization=None, data={"amount": Decimal("6000000000")})
        for slug, amount in BUDGETS:
            organization = Organization.objects.filter(slug=slug).first()
            if organization is not None:
                services.set_budget(
                    user=manager, program=program, organization=organization, data={"amount": Decimal(amount)}
                )
        for name, share in (("sakura-70b-pretrain", 1.0), ("kitsune-moe-pretrain", 0.6)):
            workload = Workload.objects.filter(name=name).select_related("organization").first()
            if workload is None or not workload.target_tokens:
                continue
            services.create_milestone(
                user=manager,
                organization=workload.organization,
                data={
                    "title": f"Pretrain {workload.model_name} on {int(workload.target_tokens * share):,} tokens",
                    "due_on": workload.allocation.ends_on if workload.allocation else day + timedelta(days=60),
                    "workload": workload,
                    "target_tokens": int(workload.target_tokens * share),
                },
            )
        sakura = Organization.objects.filter(slug="sakura-lab").first()
        if sakura is not None:
            member = Membership.objects.filter(organization=sakura).exclude(role=Membership.Role.VIEWER).first()
            release = services.create_milestone(
                user=manager,
                organization=sakura,
                data={"title": "Release the 8B model's weights", "due_on": day + timedelta(days=14)},
            )
            services.create_milestone(
                user=manager,
                organization=sakura,
                data={"title": "Publish the evaluation report", "due_on": day - timedelta(days=3)},
            )
            if member is not None:
                user = member.user
                model = services.record_deliverable(
                    user=user,
                    organization=sakura,
                    data={"kind": "model", "title": "Sakura-8B base", "released_on": day - timedelta(days=2),
                          "hf_repo_id": "sakura-lab/sakura-8b-base", "license": "apache-2.0",
                          "parameter_count": 8_030_000_000, "milestone": release},
                )  # fmt: skip
                services.record_deliverable(
                    user=user,
                    organization=sakura,
                    data={"kind": "evaluation", "title": "Sakura-8B base on JMMLU",
                          "released_on": day - timedelta(days=1), "model": model, "benchmark": "JMMLU",
                          "setting": "5-shot", "metric": "accuracy",
                          "score": Decimal("0.4871")},
                )  # fmt: skip
                services.record_deliverable(
                    user=user,
                    organization=sakura,
                    data={"kind": "paper", "title": "Sakura-8B: a Japanese-English base model (technical report)",
                          "released_on": day - timedelta(days=1), "authors": "Sakura Language Lab",
                          "url": "https://sakura-lab.example/reports/sakura-8b"},
                )  # fmt: skip
                services.report_milestone(
                    user=user, milestone=release, evidence="https://huggingface.co/sakura-lab/sakura-8b-base"
                )
        fired = alerts.check_budgets()
        # Last month's report of the program, in both languages, as beat makes it on the 1st.
        month = reports.last_month(day)
        if program.starts_on <= month.replace(day=28):
            for language in ("en", "ja"):
                reports.generate(program=program, organization=None, kind="monthly", first_day=month, language=language)
        self.stdout.write(
            f"Demo outcomes: {Milestone.objects.count()} milestones, {Budget.objects.count()} budgets, "
            f"{len(fired)} budget alerts."
        )
