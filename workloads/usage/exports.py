"""Usage as CSV: the program table of a period (streamed: thousands of organizations), and an organization's daily
usage. The header is the first row, the period is in the file name and in the first two columns of every row,
numbers are numbers (portal.exports); the figures are formatted by workloads.usage.formats and read from the same
functions as the pages, so page and file agree to the cent."""

from __future__ import annotations

from portal.exports import csv_response, csv_stream
from workloads.usage.definitions import ROW_SUMS, usd, utilization
from workloads.usage.formats import hours_value, local_value, percent_value
from workloads.usage.models import UsageDay
from workloads.usage.periods import Period
from workloads.usage.reports import ACCELERATORS, ProgramReport


def _money(micro_usd: int | None):
    return None if micro_usd is None else usd(micro_usd)


def program_csv(report: ProgramReport):
    """Every organization (by name), streamed as the rows are read."""
    currency = (report.program.currency if report.program else "local").lower()
    period = report.period
    header = [
        "period_start", "period_end", "organization", "organization_name", "allocated_instance_hours",
        "running_instance_hours", "utilization_percent", "allocated_accelerator_hours", "running_accelerator_hours",
        "allocated_cost_usd", "running_cost_usd", "idle_cost_usd", f"allocated_cost_{currency}",
        f"running_cost_{currency}", f"idle_cost_{currency}", "billed_cost_usd", "utilization_change_points",
        "idle", "busy_accelerator_hours", "idle_instance_hours", "over_allocation_instance_hours",
        "over_allocation_cost_usd", "billed_through", "billed_computed_cost_usd", "billed_gap_percent",
        "not_yet_billed_cost_usd",
    ]  # fmt: skip

    def rows():
        for row in report.iter_rows():
            f, check = row.figures, row.billed_check
            yield (
                period.first, period.last, row.organization.slug, row.organization.name, hours_value(f.allocated),
                hours_value(f.running), percent_value(f.utilization), hours_value(f.allocated_accelerators),
                hours_value(f.running_accelerators), _money(f.allocated_cost), _money(f.running_cost),
                _money(f.idle_cost), local_value(f.allocated_cost, report.program),
                local_value(f.running_cost, report.program), local_value(f.idle_cost, report.program),
                _money(row.billed), percent_value(row.change), "yes" if row.idle else "no",
                hours_value(f.busy_accelerators), hours_value(f.idle), hours_value(f.over_allocation),
                _money(f.over_allocation_cost), check.through,
                None if row.billed is None else _money(check.computed), percent_value(check.gap),
                _money(check.unbilled),
            )  # fmt: skip

    return csv_stream(f"usage-{period.file_label}", header, rows())


def org_daily_csv(organization, period: Period, program):
    response, writer = csv_response(f"usage-{organization.slug}-{period.file_label}")
    writer.writerow(
        [
            "period_start", "period_end", "day", "instance_type", "region", "allocated_instance_hours",
            "running_instance_hours", "utilization_percent", "running_accelerator_hours", "usd_per_hour",
            "rate_source", "allocated_cost_usd", "running_cost_usd", "busy_accelerator_hours", "idle_instance_hours",
            "idle_cost_usd", "over_allocation_instance_hours", "over_allocation_cost_usd",
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
        .annotate(**ROW_SUMS)
        .order_by("day", "pool__instance_type__api_name", "pool__region")
    )
    for row in rows:
        writer.writerow(
            (
                period.first, period.last, row["day"], row["pool__instance_type__api_name"], row["pool__region"],
                hours_value(row["allocated"]), hours_value(row["running"]),
                percent_value(utilization(row["running"], row["allocated"])),
                hours_value(row["running"] * row["accelerators"]), row["usd_per_hour"], row["rate_source"],
                _money(row["allocated_cost"]), _money(row["running_cost"]), hours_value(row["busy"]),
                hours_value(row["idle"]), _money(row["idle_cost"]), hours_value(row["over_allocation"]),
                _money(row["over_allocation_cost"]),
            )
        )  # fmt: skip
    return response
