"""Usage as CSV: the program table of a period, and an organization's daily usage. UTF-8 with a byte-order mark,
so Excel opens Japanese organization names correctly; the figures are formatted by workloads.usage.formats,
as on the pages, so page and file agree to the cent."""

from __future__ import annotations

from django.db.models import Sum

from portal.exports import csv_cell, csv_response
from workloads.usage.definitions import usd, utilization
from workloads.usage.formats import hours_value, local_value, percent_value
from workloads.usage.models import UsageDay
from workloads.usage.periods import Period
from workloads.usage.reports import ACCELERATORS, ProgramReport

BOM = "\ufeff"


def _money(micro_usd: int | None):
    return None if micro_usd is None else usd(micro_usd)


def program_csv(report: ProgramReport):
    currency = report.program.currency if report.program else "local"
    response, writer = csv_response(f"usage-{report.period.key}")
    response.write(BOM)
    writer.writerow(["period_start", "period_end", report.period.first.isoformat(), report.period.last.isoformat()])
    writer.writerow(
        [
            "organization", "organization_name", "allocated_instance_hours", "running_instance_hours",
            "utilization_percent", "allocated_accelerator_hours", "running_accelerator_hours", "allocated_cost_usd",
            "running_cost_usd", "idle_cost_usd", f"allocated_cost_{currency.lower()}",
            f"running_cost_{currency.lower()}", f"idle_cost_{currency.lower()}", "billed_cost_usd",
            "utilization_change_points", "idle", "busy_accelerator_hours",
        ]
    )  # fmt: skip
    for row in report.rows:
        f = row.figures
        writer.writerow(
            csv_cell(value)
            for value in (
                row.organization.slug, row.organization.name, hours_value(f.allocated), hours_value(f.running),
                percent_value(f.utilization), hours_value(f.allocated_accelerators),
                hours_value(f.running_accelerators), _money(f.allocated_cost), _money(f.running_cost),
                _money(f.idle_cost), local_value(f.allocated_cost, report.program),
                local_value(f.running_cost, report.program), local_value(f.idle_cost, report.program),
                _money(row.billed), percent_value(row.change), "yes" if row.idle else "no",
                hours_value(f.busy_accelerators),
            )
        )  # fmt: skip
    return response


def org_daily_csv(organization, period: Period, program):
    response, writer = csv_response(f"usage-{organization.slug}-{period.key}")
    response.write(BOM)
    writer.writerow(
        [
            "day", "instance_type", "region", "allocated_instance_hours", "running_instance_hours",
            "utilization_percent", "running_accelerator_hours", "usd_per_hour", "rate_source", "allocated_cost_usd",
            "running_cost_usd", "busy_accelerator_hours",
        ]
    )  # fmt: skip
    rows = (
        UsageDay.objects.for_org(organization)
        .filter(day__gte=period.first, day__lte=period.last)
        .values(
            "day",
            "pool__instance_type__api_name",
            "pool__region",
            "usd_per_hour",
            "rate_source",
            accelerators=ACCELERATORS,
        )  # fmt: skip
        .annotate(
            allocated=Sum("allocated_microseconds"),
            running=Sum("running_microseconds"),
            allocated_cost=Sum("allocated_cost_micro_usd"),
            running_cost=Sum("running_cost_micro_usd"),
            busy=Sum("busy_accelerator_microseconds"),
        )
        .order_by("day", "pool__instance_type__api_name", "pool__region")
    )
    for row in rows:
        writer.writerow(
            csv_cell(value)
            for value in (
                row["day"].isoformat(), row["pool__instance_type__api_name"], row["pool__region"],
                hours_value(row["allocated"]), hours_value(row["running"]),
                percent_value(utilization(row["running"], row["allocated"])),
                hours_value(row["running"] * row["accelerators"]), row["usd_per_hour"], row["rate_source"],
                _money(row["allocated_cost"]), _money(row["running_cost"]), hours_value(row["busy"]),
            )
        )  # fmt: skip
    return response
