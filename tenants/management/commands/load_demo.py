"""Load the demo program used by `make run`. Idempotent: a second run changes nothing.

Demo users (password "demo") exist only here, never in migrations, and the command refuses to run
in production.
"""

from datetime import date, datetime, time, timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.utils import timezone

from tenants.audit import record_audit
from tenants.capacity.allocations import refresh_allocation_statuses
from tenants.models import (
    Allocation,
    CapacityPool,
    CapacityRequest,
    InstanceType,
    Membership,
    Organization,
    Program,
    Region,
    StaffRole,
)

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
# The demo organizations' people (lead, researcher, engineer, observer): names for the Members pages.
DEMO_GIVEN_NAMES = ["Haruka", "Kenji", "Yui", "Daichi", "Aoi", "Ren", "Mio", "Sota", "Hina", "Takumi", "Emi", "Yuto"]
DEMO_FAMILY_NAMES = [
    "Sato",
    "Suzuki",
    "Takahashi",
    "Tanaka",
    "Ito",
    "Watanabe",
    "Yamamoto",
    "Nakamura",
    "Kato",
    "Mori",
    "Ono",
]
# Minato Finance Models' launch allocation ends early; its cluster keeps running (load_demo_usage's story).
EARLY_END = 6
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
                "ends_on": add_months(starts_on, 6) - timedelta(days=1),  # six months, last day inclusive
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
                    # Every other organization reads its email in Japanese (Sakura Language Lab first).
                    "language": "ja" if number % 2 else "en",
                },
            )
            organizations.append(org)
        for username, org in (("tenant1", organizations[0]), ("tenant2", organizations[1])):
            user = self._user(username, username.capitalize(), "Demo")
            Membership.objects.get_or_create(user=user, organization=org, defaults={"role": Membership.Role.ADMIN})
        self._members(organizations)
        if not CapacityRequest.objects.filter(pool__program=program).exists():
            self._capacity(program, organizations, manager)

        self.stdout.write(
            f"Demo program {'created' if created else 'already present'}: {program.name} "
            f"({program.starts_on} – {program.ends_on}), {len(organizations)} organizations, "
            f"{CapacityPool.objects.filter(program=program).count()} pools. "
            f"Logins (password '{DEMO_PASSWORD}'): {manager.username}, {support.username}, tenant1 (admin), member1, "
            f"viewer1 (Sakura Language Lab), tenant2 (admin, Kitsune AI)."
        )

    def _capacity(self, program: Program, organizations: list[Organization], manager) -> None:
        """Allocations for the whole cycle (the day-one launch) and two requests waiting for review."""
        pools = {(p.instance_type.api_name, p.region): p for p in program.pools.select_related("instance_type")}
        launch = [("p5.48xlarge", Region.US_EAST_1, 12)] * 5 + [("p5.48xlarge", Region.AP_NORTHEAST_1, 12)] * 5
        launch += [("trn1.32xlarge", Region.US_EAST_1, 8)] * 2
        decided_at = timezone.make_aware(datetime.combine(program.starts_on - timedelta(days=7), time(10)))
        for index, (org, (api_name, region, count)) in enumerate(zip(organizations, launch, strict=True)):
            pool = pools[(api_name, region)]
            ends_on = program.ends_on
            if index == EARLY_END:  # its allocation ended ten days ago (two weeks in, before the program starts)
                ends_on = min(max(date.today() - timedelta(days=10), program.starts_on + timedelta(days=13)), ends_on)
            request = CapacityRequest.objects.create(
                organization=org, pool=pool, instance_count=count, starts_on=program.starts_on,
                ends_on=ends_on, justification="Cycle launch allocation.",
                status=CapacityRequest.Status.APPROVED, created_by=manager, submitted_at=decided_at,
                decided_by=manager, decided_at=decided_at, decision_comment="Day-one allocation.",
            )  # fmt: skip
            Allocation.objects.create(
                organization=org, pool=pool, request=request, instance_count=count,
                starts_on=request.starts_on, ends_on=request.ends_on,
            )  # fmt: skip
        refresh_allocation_statuses()
        # Next month, or the program's second month if it has not started yet.
        next_month = max(add_months(date.today().replace(day=1), 1), add_months(program.starts_on, 1))
        for org, (api_name, region), count, params, justification in (
            (organizations[0], ("p5.48xlarge", Region.US_EAST_1), 8, 70 * 10**9, "Scale the 70B run for its finale."),
            (organizations[1], ("trn1.32xlarge", Region.US_EAST_1), 6, 8 * 10**9, "Port the 8B model to Trainium."),
        ):  # fmt: skip
            request = CapacityRequest.objects.create(
                organization=org, pool=pools[(api_name, region)], instance_count=count, starts_on=next_month,
                ends_on=add_months(next_month, 2) - timedelta(days=1), justification=justification,
                parameter_count=params, training_tokens=params * 20, framework="megatron",
                status=CapacityRequest.Status.SUBMITTED, created_by=org.memberships.order_by("pk").first().user,
                submitted_at=timezone.now(),
            )  # fmt: skip
            for action, changes in (("request.created", {"instance_count": (None, count)}),
                                    ("request.submitted", {"status": ("draft", "submitted")})):  # fmt: skip
                record_audit(actor=request.created_by, organization=org, action=action, target=request, changes=changes)

    def _members(self, organizations: list[Organization]) -> None:
        """A few people with each role in every organization. Sakura Language Lab's member and viewer sign in with
        the demo password (member1, viewer1); the others are people who would sign in by SSO (no password)."""
        for number, org in enumerate(organizations, start=1):
            short = org.slug.split("-")[0]
            people = [("researcher", Membership.Role.MEMBER), ("engineer", Membership.Role.MEMBER)]
            people += [("observer", Membership.Role.VIEWER)]
            if number > 2:  # tenant1 and tenant2 are the admins of the first two
                people.insert(0, ("lead", Membership.Role.ADMIN))
            for title, role in people:
                username = f"{short}-{title}"
                if number == 1 and title in ("researcher", "observer"):
                    username = "member1" if title == "researcher" else "viewer1"
                index = len(organizations) * people.index((title, role)) + number
                first, last = DEMO_GIVEN_NAMES[index % len(DEMO_GIVEN_NAMES)], DEMO_FAMILY_NAMES[index % 11]
                user = self._user(username, first, last, password=number == 1)
                Membership.objects.get_or_create(user=user, organization=org, defaults={"role": role})

    def _user(
        self, username: str, first: str, last: str, staff: str | None = None, admin: bool = False, password: bool = True
    ):
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
            if password:
                user.set_password(DEMO_PASSWORD)
            else:
                user.set_unusable_password()
            user.save(update_fields=["password"])
        if staff:
            StaffRole.objects.get_or_create(user=user, defaults={"role": staff})
        return user
