"""Load the demo program used by `make run`. Idempotent: a second run changes nothing.

Demo users (password "demo") exist only here, never in migrations, and the command refuses to run
in production.
"""

from datetime import date

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from tenants.models import CapacityPool, InstanceType, Membership, Organization, Program, Region, StaffRole

DEMO_PASSWORD = "demo"
# Twelve fictional organizations, loosely shaped like a national program's cohort.
DEMO_ORGS = [
    ("Sakura Language Lab", "sakura-lab"),
    ("Kitsune AI", "kitsune-ai"),
    ("Hokuto Research Institute", "hokuto"),
    ("Aozora Robotics", "aozora-robotics"),
    ("Tsubame Medical AI", "tsubame-medical"),
    ("Kumo Speech Systems", "kumo-speech"),
    ("Minato Finance Models", "minato-finance"),
    ("Yamabiko Vision", "yamabiko-vision"),
    ("Shirakawa University NLP", "shirakawa-nlp"),
    ("Hoshizora Materials", "hoshizora-materials"),
    ("Kaede Code Models", "kaede-code"),
    ("Nagisa Multimodal", "nagisa-multimodal"),
]
# (instance type, region, total, spare): 127 P5 split across two regions, 24 Trn1 in us-east-1.
DEMO_POOLS = [
    ("p5.48xlarge", Region.US_EAST_1, 64, 2),
    ("p5.48xlarge", Region.AP_NORTHEAST_1, 63, 2),
    ("trn1.32xlarge", Region.US_EAST_1, 24, 1),
]


def add_months(day: date, months: int) -> date:
    month_index = day.month - 1 + months
    return date(day.year + month_index // 12, month_index % 12 + 1, 1)


class Command(BaseCommand):
    help = "Create the demo program, 12 organizations, pools and demo users (idempotent)."

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--start",
            type=date.fromisoformat,
            help="Program start date (YYYY-MM-DD). Default: the first of last month, so the demo is mid-cycle.",
        )

    @transaction.atomic
    def handle(self, *args, start: date | None = None, **options) -> None:
        if settings.PRODUCTION:
            raise CommandError("Refusing to load demo users and data with PORTAL_PRODUCTION=True.")
        starts_on = start or add_months(date.today().replace(day=1), -1)
        program, created = Program.objects.get_or_create(
            slug="fm-program-demo",
            defaults={
                "name": "FM Program (demo cycle)",
                "starts_on": starts_on,
                "ends_on": add_months(starts_on, 6),
                "timezone": "Asia/Tokyo",
                "currency": "JPY",
                "usd_exchange_rate": 150,
            },
        )
        for api_name, region, total, spare in DEMO_POOLS:
            CapacityPool.objects.get_or_create(
                program=program,
                instance_type=InstanceType.objects.get(api_name=api_name),
                region=region,
                capacity_reservation_id="",
                defaults={
                    "total_instances": total,
                    "spare_instances": spare,
                    "starts_on": program.starts_on,
                    "ends_on": program.ends_on,
                },
            )

        # The manager also gets Django's admin, where pools and the catalog are edited.
        manager = self._user("manager", "Program", "Manager", staff=StaffRole.Role.PROGRAM_MANAGER, admin=True)
        support = self._user("support", "Support", "Engineer", staff=StaffRole.Role.SUPPORT_ENGINEER)
        organizations = []
        for number, (name, slug) in enumerate(DEMO_ORGS, start=1):
            org, _ = Organization.objects.get_or_create(
                slug=slug,
                defaults={
                    "name": name,
                    "aws_account_id": f"{100000000000 + number:012d}",
                    "role_arn": f"arn:aws:iam::{100000000000 + number:012d}:role/FMProgramPortalAccess",
                    "external_id": f"fm-program-{slug}",
                    "lead_engineer": support,
                    "contact_name": f"{name} training lead",
                    "contact_email": f"lead@{slug}.example",
                },
            )
            organizations.append(org)
        for username, org in (("tenant1", organizations[0]), ("tenant2", organizations[1])):
            user = self._user(username, username.capitalize(), "Demo")
            Membership.objects.get_or_create(user=user, organization=org, defaults={"role": Membership.Role.ADMIN})

        self.stdout.write(
            f"Demo program {'created' if created else 'already present'}: {program.name} "
            f"({program.starts_on} – {program.ends_on}), {len(organizations)} organizations, "
            f"{CapacityPool.objects.filter(program=program).count()} pools. "
            f"Logins (password '{DEMO_PASSWORD}'): {manager.username}, {support.username}, tenant1, tenant2."
        )

    def _user(self, username: str, first: str, last: str, staff: str | None = None, admin: bool = False):
        user, created = get_user_model().objects.get_or_create(
            username=username,
            defaults={
                "first_name": first,
                "last_name": last,
                "email": f"{username}@demo.example",
                "is_staff": admin,
                "is_superuser": admin,
            },
        )
        if created:
            user.set_password(DEMO_PASSWORD)
            user.save(update_fields=["password"])
        if staff:
            StaffRole.objects.get_or_create(user=user, defaults={"role": staff})
        return user
