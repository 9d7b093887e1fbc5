"""Usage accounting: node intervals become accounting records (they outlive their cluster and node, carry their
region, and count an open run up to the last poll that saw it), daily rollups, the rate card, billed cost and
the weekly digest's record. Every organization's days so far are marked for the first rollup to compute."""

from datetime import timedelta

import django.core.validators
import django.db.models.deletion
from decimal import Decimal
from django.conf import settings
from django.db import migrations, models
from django.utils import timezone


def fill_interval_fields(apps, schema_editor):
    NodeInterval = apps.get_model("workloads", "NodeInterval")
    for interval in NodeInterval.objects.select_related("cluster", "node").iterator():
        interval.region = interval.cluster.region if interval.cluster_id else "us-east-1"
        if interval.ended_at is not None:
            interval.last_seen_at = interval.ended_at
        elif interval.node_id is not None:
            interval.last_seen_at = max(interval.node.last_seen_at, interval.started_at)
        else:
            interval.last_seen_at = interval.started_at
        interval.save(update_fields=["region", "last_seen_at"])


def mark_every_day_so_far(apps, schema_editor):
    """The first rollup builds the history: every day from each org's first allocation or run until today."""
    Allocation = apps.get_model("tenants", "Allocation")
    NodeInterval = apps.get_model("workloads", "NodeInterval")
    UsageDirtyDay = apps.get_model("workloads", "UsageDirtyDay")
    today = timezone.localdate()
    firsts: dict[int, object] = {}
    for org_id, day in Allocation.objects.values_list("organization_id", "starts_on"):
        firsts[org_id] = min(day, firsts.get(org_id, day))
    for org_id, started in NodeInterval.objects.values_list("organization_id", "started_at"):
        day = timezone.localdate(started)
        firsts[org_id] = min(day, firsts.get(org_id, day))
    marks = []
    for org_id, first in firsts.items():
        day = first
        while day <= today:
            marks.append(UsageDirtyDay(organization_id=org_id, day=day))
            day += timedelta(days=1)
    UsageDirtyDay.objects.bulk_create(marks, ignore_conflicts=True, batch_size=1000)


class Migration(migrations.Migration):
    dependencies = [
        ("tenants", "0007_program_idle_threshold"),
        ("workloads", "0006_case_opened_by_system"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="nodeinterval",
            name="region",
            field=models.CharField(
                choices=[("us-east-1", "US East (N. Virginia)"), ("ap-northeast-1", "Asia Pacific (Tokyo)")],
                default="",
                max_length=32,
                verbose_name="region",
            ),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="nodeinterval",
            name="last_seen_at",
            field=models.DateTimeField(null=True, verbose_name="last seen running at"),
        ),
        migrations.RunPython(fill_interval_fields, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="nodeinterval",
            name="last_seen_at",
            field=models.DateTimeField(verbose_name="last seen running at"),
        ),
        migrations.AlterField(
            model_name="nodeinterval",
            name="cluster",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="node_intervals",
                to="workloads.cluster",
                verbose_name="cluster",
            ),
        ),
        migrations.AlterField(
            model_name="nodeinterval",
            name="node",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="intervals",
                to="workloads.clusternode",
            ),
        ),
        migrations.AddIndex(
            model_name="nodeinterval",
            index=models.Index(fields=["organization", "started_at"], name="interval_org_start"),
        ),
        migrations.CreateModel(
            name="UsageDirtyDay",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("day", models.DateField()),
                ("marked_at", models.DateTimeField(auto_now_add=True)),
                (
                    "organization",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="+", to="tenants.organization"
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(fields=("organization", "day"), name="one_dirty_mark_per_day")
                ]
            },
        ),
        migrations.RunPython(mark_every_day_so_far, migrations.RunPython.noop),
    ]
