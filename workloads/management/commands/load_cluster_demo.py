"""Cloud settings for the demo organizations, so `make run` can create HyperPod clusters against the
local emulator. Idempotent, and refused in production. Called by scripts/run-embedded after load_demo."""

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from tenants.models import Organization
from workloads.models import OrgCloudSettings


class Command(BaseCommand):
    help = "Give every demo organization cluster settings: lifecycle scripts in S3, execution role, subnets."

    @transaction.atomic
    def handle(self, *args, **options) -> None:
        if settings.PRODUCTION:
            raise CommandError("Refusing to load demo cloud settings with PORTAL_PRODUCTION=True.")
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
