"""The daily rows already there kept as the rollup now keeps them (workloads.usage.definitions: the unit of
account): instance-time on the grain (0.36 s), cost to the cent at the row's own rate, the clusters' parts shared
out of their row; what Cost Explorer billed to the cent; then every summary summed again from them. A day at a
time, so a long history never sits in memory."""

from collections import defaultdict
from decimal import Decimal

from django.db import migrations

DAY_FIELDS = ["allocated_microseconds", "running_microseconds", "busy_accelerator_microseconds",
              "allocated_cost_micro_usd", "running_cost_micro_usd"]  # fmt: skip
BATCH = 2_000


def keep_exact(apps, schema_editor):
    from portal.periods import today
    from workloads.usage.definitions import cost_micro_usd, micro_usd_to_the_cent, to_grain
    from workloads.usage.rollups import cluster_parts, kept_figures
    from workloads.usage.summaries import write, write_recent

    usage_day = apps.get_model("workloads", "UsageDay")
    cluster_usage_day = apps.get_model("workloads", "ClusterUsageDay")
    billed_cost = apps.get_model("workloads", "BilledCost")
    days = sorted(set(usage_day.objects.order_by().values_list("day", flat=True).distinct()))
    for day in days:
        kept = {}
        rows = list(usage_day.objects.filter(day=day).select_related("pool__instance_type"))
        for row in rows:
            row.allocated_microseconds, row.running_microseconds, row.busy_accelerator_microseconds = kept_figures(
                row.allocated_microseconds,
                row.running_microseconds,
                row.busy_accelerator_microseconds,
                accelerators=row.pool.instance_type.accelerators_per_instance,
            )
            row.allocated_cost_micro_usd = cost_micro_usd(row.allocated_microseconds, row.usd_per_hour)
            row.running_cost_micro_usd = cost_micro_usd(row.running_microseconds, row.usd_per_hour)
            kept[(row.organization_id, row.pool_id)] = row
        usage_day.objects.bulk_update(rows, DAY_FIELDS, batch_size=BATCH)
        clusters = defaultdict(list)
        for part in cluster_usage_day.objects.filter(day=day):
            clusters[(part.organization_id, part.pool_id)].append(part)
        changed = []
        for key, parts in clusters.items():
            parts.sort(key=lambda p: (p.cluster_id is None, p.cluster_id or 0, p.pk))
            row = kept.get(key)
            if row is None:  # a cluster's part without its row (never written so): on the grain by itself
                for part in parts:
                    part.running_microseconds = to_grain(part.running_microseconds)
                    if part.busy_accelerator_microseconds is not None:
                        part.busy_accelerator_microseconds = to_grain(part.busy_accelerator_microseconds)
                changed += parts
                continue
            shared = cluster_parts(
                [(p, p.running_microseconds, p.busy_accelerator_microseconds) for p in parts],
                row.running_microseconds,
                row.busy_accelerator_microseconds,
            )
            for part, running, busy in shared:
                part.running_microseconds, part.busy_accelerator_microseconds = running, busy
                changed.append(part)
        cluster_usage_day.objects.bulk_update(
            changed, ["running_microseconds", "busy_accelerator_microseconds"], batch_size=BATCH
        )
    changed = []
    for billed in billed_cost.objects.order_by("pk").iterator(chunk_size=BATCH):
        cents = micro_usd_to_the_cent(Decimal(billed.cost_micro_usd) / 1_000_000)
        if cents != billed.cost_micro_usd:
            billed.cost_micro_usd = cents
            changed.append(billed)
        if len(changed) >= BATCH:
            billed_cost.objects.bulk_update(changed, ["cost_micro_usd"])
            changed = []
    billed_cost.objects.bulk_update(changed, ["cost_micro_usd"])
    write(
        usage_day,
        billed_cost,
        *(apps.get_model("workloads", name) for name in ("UsageWeek", "PoolUsageDay", "SettledWeek")),
        days=None,
        organization_ids=None,
    )
    write_recent(usage_day, apps.get_model("workloads", "RecentPoolUse"), organization_ids=None, through=today())


class Migration(migrations.Migration):
    dependencies = [
        ("workloads", "0031_case_text_in_each_language"),
    ]

    operations = [
        migrations.RunPython(keep_exact, migrations.RunPython.noop),
    ]
