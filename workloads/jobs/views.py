"""Job pages: the jobs of the clusters the reader may see, filtered to a cluster or a workload (the cluster and
workload pages link here), with what is running now summed by user and partition."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.db.models import Count, Sum
from django.views.decorators.http import require_GET

from portal.pages import render_page
from portal.tables import sort_table
from tenants.access import is_program_staff
from workloads.jobs.filters import JobFilter
from workloads.jobs.models import Job
from workloads.jobs.tables import JobTable

PAGE_SIZE = 50


@login_required
@require_GET
def job_list(request):
    jobs = Job.objects.visible_to(request.user).select_related("organization", "cluster")
    filterset = JobFilter(request.GET, queryset=jobs, request=request)
    jobs = filterset.qs if filterset.is_valid() else jobs.none()
    running = jobs.running()
    cluster = filterset.form.cleaned_data.get("cluster") if filterset.is_valid() else None
    # Newest first; the columns sort (?sort=) by indexed fields. One cluster's list has no cluster column.
    table = JobTable(jobs, order_by="-job", exclude=("cluster",) if cluster else ())
    table = sort_table(request, table, per_page=PAGE_SIZE)
    context = {
        "filterset": filterset,
        "table": table,
        "page": table.page,
        "running": running.aggregate(jobs=Count("pk"), accelerators=Sum("accelerators")),
        # A username or a partition name means one person or queue only within its organization and cluster:
        # "alice" of two organizations are two people, so the summaries group by them too.
        "by_user": _summary(running, "organization__name", "user"),
        "by_partition": _summary(running, "cluster__name", "partition"),
        "cluster": cluster,
        "workload": filterset.form.cleaned_data.get("workload") if filterset.is_valid() else None,
        "is_staff": is_program_staff(request.user),
    }
    return render_page(
        request, "workloads/jobs/job_list.html", context, fragment="job-table", status=400 if filterset.errors else 200
    )


def _summary(running, scope: str, column: str) -> list[dict]:
    """Running jobs and their accelerators per user or partition within its `scope` (organization, cluster), the
    largest first (ten at most). Each row has `scope` (the organization's or cluster's name) and `name`."""
    rows = (
        running.values(scope, column)
        .annotate(jobs=Count("pk"), accelerators=Sum("accelerators"))
        .order_by("-accelerators", scope, column)[:10]
    )
    return [
        {"scope": row[scope], "name": row[column], "jobs": row["jobs"], "accelerators": row["accelerators"]}
        for row in rows
    ]


def recent_jobs(cluster, limit: int = 8) -> dict:
    """What the cluster page shows of its jobs: running now (count, accelerators) and the latest few."""
    jobs = Job.objects.for_org(cluster.organization).filter(cluster=cluster)
    return {
        "running": jobs.running().aggregate(jobs=Count("pk"), accelerators=Sum("accelerators")),
        "latest": list(jobs.order_by("-submitted_at", "-pk")[:limit]),
    }
