"""Upgrades that are proven: a database holding a program at an earlier schema is migrated forward to
the latest, and its figures are what they were, the data migrations having filled what the new schema adds.

The database starts at the project's first schema (commit d0a9a16, 2026-11-22: tenants up to 0002, no workloads
tables), so every migration of the last month runs over data; a guard below keeps the start at least a month
old as new migrations come. Rows are written with the historical models of each step (the migration
executor's state), never with today's models, as an older version of the portal wrote them.
"""

from __future__ import annotations

import subprocess
from datetime import date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from zoneinfo import ZoneInfo

from django.conf import settings
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from tenants.capacity.models import PoolDay
from tenants.models import Allocation, Organization
from tests.environment import unavailable
from tests.program_figures import allocations, program_figures, usage_by_org_week, week_summaries
from tests.scratch_db import as_default, scratch_database
from workloads.usage import rollups
from workloads.usage.models import NodeInterval
from workloads.usage.rates import load_rates

# The project's first schema, and one before usage accounting (workloads 0007) and the pool ledger (tenants 0009).
START = [("tenants", "0002_seed_catalog")]
BEFORE_USAGE = [("tenants", "0008_free_text_limits"), ("workloads", "0006_case_opened_by_system")]
TOKYO = ZoneInfo("Asia/Tokyo")
WEEK1, WEEK2 = date(2026, 10, 5), date(2026, 10, 12)  # two ISO weeks, well before any run of this test
AS_OF = datetime(2026, 11, 1, tzinfo=TOKYO)  # the figures as of a moment after both weeks
RUNS = [  # (instance, start, hours): one 10-hour run in the first week, one of 24 hours across days in the second
    ("i-0a", datetime(2026, 10, 6, 0, 0, tzinfo=TOKYO), 10),
    ("i-0b", datetime(2026, 10, 13, 12, 0, tzinfo=TOKYO), 24),
]


# The audit trail's columns as program_figures reads them.
AUDIT_FIELDS = ("pk", "organization__slug", "actor__username", "action", "target_type", "target_id", "changes",
                "comment", "created_at")  # fmt: skip


def migrate(targets: list[tuple[str, str]]):
    """Migrate the (default) database to `targets`; the historical apps of the state reached."""
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    executor.loader.build_graph()
    return executor.loader.project_state(targets).apps


def latest() -> list[tuple[str, str]]:
    return MigrationExecutor(connection).loader.graph.leaf_nodes()


def write_first_schema(apps) -> None:
    """What the first version held: a program, its pool, an organization and its people."""
    User = apps.get_model("auth", "User")
    Program, Pool = apps.get_model("tenants", "Program"), apps.get_model("tenants", "CapacityPool")
    Organization, Membership = apps.get_model("tenants", "Organization"), apps.get_model("tenants", "Membership")
    InstanceType, StaffRole = apps.get_model("tenants", "InstanceType"), apps.get_model("tenants", "StaffRole")
    program = Program.objects.create(
        name="FM Program", slug="fm", starts_on=date(2026, 10, 1), ends_on=date(2027, 3, 31)
    )
    Pool.objects.create(
        program=program, instance_type=InstanceType.objects.get(api_name="p5.48xlarge"), region="us-east-1",
        total_instances=8, starts_on=date(2026, 10, 1), ends_on=date(2027, 3, 31),
    )  # fmt: skip
    org = Organization.objects.create(name="Sakura Language Lab", slug="sakura-lab")
    for username, role in (("haruka", "admin"), ("kenji", "member")):
        Membership.objects.create(user=User.objects.create(username=username), organization=org, role=role)
    StaffRole.objects.create(user=User.objects.create(username="manager"), role="program_manager")


def write_before_usage(apps) -> None:
    """What a later version added before usage accounting: an allocation of two instances over two weeks, its
    audit event, a cluster and the node runs the poller recorded (no region, no last-seen time yet)."""
    org = apps.get_model("tenants", "Organization").objects.get(slug="sakura-lab")
    pool = apps.get_model("tenants", "CapacityPool").objects.get()
    manager = apps.get_model("auth", "User").objects.get(username="manager")
    allocation = apps.get_model("tenants", "Allocation").objects.create(
        organization=org, pool=pool, instance_count=2, starts_on=WEEK1, ends_on=WEEK2 + timedelta(days=6),
        status="expired",
    )  # fmt: skip
    apps.get_model("tenants", "AuditEvent").objects.create(
        organization=org, actor=manager, action="allocation.granted", target_type="allocation",
        target_id=allocation.pk, changes={"instance_count": [None, 2]}, comment="Launch allocation",
    )  # fmt: skip
    cluster = apps.get_model("workloads", "Cluster").objects.create(
        organization=org, allocation=allocation, name="p5-pretrain", kind="hyperpod_slurm", region="us-east-1",
        status="deleted",
    )  # fmt: skip
    Node, Interval = apps.get_model("workloads", "ClusterNode"), apps.get_model("workloads", "NodeInterval")
    for instance, start, hours in RUNS:
        end = start + timedelta(hours=hours)
        node = Node.objects.create(
            organization=org, cluster=cluster, instance_id=instance, group_name="workers",
            instance_type="p5.48xlarge", status="Terminated", first_seen_at=start, last_seen_at=end, gone_at=end,
        )  # fmt: skip
        Interval.objects.create(
            organization=org, cluster=cluster, node=node, instance_id=instance, instance_type="p5.48xlarge",
            started_at=start, ended_at=end,
        )  # fmt: skip


def test_a_database_from_the_first_schema_migrates_forward_with_its_figures(django_db_blocker):
    with django_db_blocker.unblock(), scratch_database() as empty, as_default(empty):
        write_first_schema(migrate(START))
        apps = migrate(BEFORE_USAGE)
        write_before_usage(apps)
        audit_before = list(apps.get_model("tenants", "AuditEvent").objects.values_list(*AUDIT_FIELDS))
        migrate(latest())
        figures = _check_upgraded(audit_before)
        # Today's code rebuilding every figure from the upgraded rows finds the same.
        rollups.mark_everything()
        rollups.roll_up()
        assert program_figures(as_of=AS_OF) == figures


def _check_upgraded(audit_before: list) -> dict:
    # The data migrations filled what the new schema adds: the interval's region and last sighting (0007), the pool
    # ledger from the allocations (tenants 0009), and every day since the first allocation marked for the rollup.
    assert set(NodeInterval.objects.values_list("instance_id", "region", "last_seen_at")) == {
        (instance, "us-east-1", start + timedelta(hours=hours)) for instance, start, hours in RUNS
    }
    assert sorted(PoolDay.objects.values_list("day", "allocated")) == [
        (WEEK1 + timedelta(days=n), 2) for n in range(14)
    ]
    assert Organization.objects.get().memberships.count() == 2
    rollups.roll_up()  # what the worker's periodic rollup does after the upgrade
    p5 = Allocation.objects.get().pool.instance_type
    rate = Decimal("55.04")  # the catalog's P5 price in us-east-1 (tenants/data/instance_types.json), USD an hour
    assert load_rates().rate(p5.pk, "us-east-1", WEEK1).usd_per_hour == rate
    usage = usage_by_org_week()
    for week, running_hours in ((WEEK1, 10), (WEEK2, 24)):
        figures = usage[("sakura-lab", _week_key(usage, week))]
        assert figures["allocated"] == 2 * 7 * 24 * 3600 * 10**6  # instance-microseconds: 2 instances, 7 days
        assert figures["running"] == running_hours * 3600 * 10**6
        assert figures["running_cost"] == int(running_hours * rate * 10**6)  # 10 h × 55.04 = 550.40, 24 h = 1,320.96
        assert figures["idle"] == (2 * 7 * 24 - running_hours) * 3600 * 10**6
    assert week_summaries() == usage  # the program pages' summaries agree with the daily rows
    ((_slug, *_, granted, allocated, running, remaining, _unused),) = allocations(as_of=AS_OF)
    assert (granted, allocated, running, remaining) == (2 * 14 * 24 * 3600 * 10**6,) * 2 + (34 * 3600 * 10**6, 0)
    figures = program_figures(as_of=AS_OF)
    assert figures["audit trail"] == audit_before  # the trail, untouched
    return figures


def _week_key(usage: dict, monday: date):
    """The week's key as the database returns TruncWeek (a date, or a datetime at midnight)."""
    for _slug, week in usage:
        if (week.date() if isinstance(week, datetime) else week) == monday:
            return week
    raise AssertionError(f"no usage in the week of {monday}: {sorted(usage)}")


def test_the_start_is_at_least_a_month_old():
    """Every migration the upgrade test starts with applied was added a month or more before the latest commit,
    or is one of the project's first (nothing older to start from): the test always covers the last month."""
    base = Path(settings.BASE_DIR)

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=base, capture_output=True, text=True, timeout=30)
        if done.returncode != 0:
            unavailable(f"git {' '.join(args)}: {done.stderr.strip()}")
        return done.stdout.strip()

    if not (base / ".git").exists():
        unavailable("no git history to date the migrations by")
    head = int(git("log", "-1", "--format=%ct"))
    root_files = set(git("show", "--format=", "--name-only", git("rev-list", "--max-parents=0", "HEAD")).split())
    for app, name in START:
        path = f"{app}/migrations/{name}.py"
        added = git("log", "--follow", "--diff-filter=A", "--format=%ct", "--", path).split()
        if path in root_files:
            continue
        assert added and head - int(added[-1]) >= 31 * 86_400, f"{path} is younger than a month: start earlier"


def test_the_models_and_the_migrations_agree(db):
    """A model change without its migration would reach production as a schema the code does not expect."""
    call_command("makemigrations", "--check", "--dry-run", verbosity=0)
