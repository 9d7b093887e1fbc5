"""A cluster's interconnect checks: the chosen (by default the latest) nccl-tests run charted against its baseline,
and the history of runs."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404
from django.views.decorators.http import require_GET

from portal.pages import id_param, paginate, render_page
from workloads.clusters.models import Cluster
from workloads.validation.charts import bandwidth_chart, size_label
from workloads.validation.models import NcclValidation

PAGE_SIZE = 25


@login_required
@require_GET
def interconnect(request, pk: int):
    cluster = get_object_or_404(Cluster.objects.visible_to(request.user).select_related("organization"), pk=pk)
    runs = NcclValidation.objects.for_org(cluster.organization).filter(cluster=cluster).order_by("-submitted_at", "-pk")
    chosen = None
    if (run_id := id_param(request.GET.get("run"))) is not None:
        chosen = runs.filter(pk=run_id).first()
    chosen = chosen or runs.first()
    context = {
        "cluster": cluster,
        "run": chosen,
        "chart": bandwidth_chart(chosen) if chosen else None,
        "peak_size": size_label(chosen.peak_size_bytes) if chosen else "",
        "page": paginate(request, runs.defer("log", "rows"), PAGE_SIZE),
    }
    return render_page(request, "workloads/validation/interconnect.html", context)


interconnect.tenant_model = Cluster


def latest_run(cluster: Cluster) -> NcclValidation | None:
    """The cluster page's line on its interconnect."""
    runs = NcclValidation.objects.for_org(cluster.organization).filter(cluster=cluster).defer("log")
    return runs.order_by("-submitted_at", "-pk").first()
