"""Cloud settings for the demo organizations, so `make run` can create HyperPod clusters against the
local emulator. Idempotent, and refused in production. Called by scripts/run-embedded after load_demo,
and again with --seed-emulator once the emulator is up, to put sample lifecycle scripts in its S3."""

import time

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from portal.cloud import AccountAccess, TransientCloudError, session_for
from portal.cloud.lifecycle import SAMPLE_ON_CREATE, seed_lifecycle_scripts
from tenants.models import Organization
from workloads.models import OrgCloudSettings


class Command(BaseCommand):
    help = "Give every demo organization cluster settings: lifecycle scripts in S3, execution role, subnets."

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--seed-emulator",
            action="store_true",
            help="Put sample lifecycle scripts at every org's S3 location (needs AWS_ENDPOINT_URL: the emulator).",
        )

    def handle(self, *args, seed_emulator: bool = False, **options) -> None:
        if settings.PRODUCTION:
            raise CommandError("Refusing to load demo cloud settings with PORTAL_PRODUCTION=True.")
        if seed_emulator:
            self.seed()  # network calls: outside any transaction
        else:
            self.load()

    @transaction.atomic
    def load(self) -> None:
        created = 0
        for number, org in enumerate(Organization.objects.exclude(aws_account_id="").order_by("pk"), start=1):
            _, was_created = OrgCloudSettings.objects.get_or_create(
                organization=org,
                defaults={
                    # The emulator, like HyperPod's own examples, wants lifecycle scripts under s3://sagemaker-…
                    "lifecycle_s3_uri": f"s3://sagemaker-{org.slug}-lifecycle/hyperpod/",
                    "execution_role_arn": f"arn:aws:iam::{org.aws_account_id}:role/HyperPodExecution",
                    "subnet_ids": [f"subnet-0{number:016x}"],
                    "security_group_ids": [f"sg-0{number:016x}"],
                    "eks_cluster_arn": f"arn:aws:eks:us-east-1:{org.aws_account_id}:cluster/{org.slug}-training",
                    "ssh_key_name": f"{org.slug}-admin",
                },
            )
            created += was_created
        self.stdout.write(f"Cluster demo settings: {created} created, {OrgCloudSettings.objects.count()} in all.")

    def seed(self) -> None:
        if not settings.AWS_ENDPOINT_URL:
            raise CommandError("--seed-emulator writes to S3: set AWS_ENDPOINT_URL to the emulator first.")
        rows = list(OrgCloudSettings.objects.select_related("organization"))
        for attempt in range(30):  # the emulator may still be starting
            try:
                for row in rows:
                    session = session_for(AccountAccess.for_organization(row.organization, "us-east-1"))
                    seed_lifecycle_scripts(session, row.lifecycle_s3_uri, {"on_create.sh": SAMPLE_ON_CREATE})
                break
            except TransientCloudError:
                if attempt == 29:
                    raise
                time.sleep(0.5)
        self.stdout.write(f"Sample lifecycle scripts in the emulator for {len(rows)} organizations.")
