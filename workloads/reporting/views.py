"""A cluster's Reporter page: its reporter's state, its tokens (issued with the key shown once, revoked), and how to
install the head-node script with this cluster's values filled in; and the script itself, for download."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import FileResponse
from django.shortcuts import get_object_or_404, redirect
from django.utils import translation
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from portal.pages import render_page
from tenants.access import get_org_access_or_404
from workloads.clusters.models import Cluster
from workloads.reporting import fmp_progress, fmp_reporter, services
from workloads.reporting.forms import ReporterTokenForm
from workloads.reporting.models import ReporterToken

SCRIPT = Path(fmp_reporter.__file__)
PROGRESS_SCRIPT = Path(fmp_progress.__file__)


def _visible_cluster(request, pk: int) -> Cluster:
    return get_object_or_404(Cluster.objects.visible_to(request.user).select_related("organization"), pk=pk)


@login_required
@never_cache  # the page that shows a new key must not be kept by any cache
def reporter(request, pk: int):
    cluster = _visible_cluster(request, pk)
    access = get_org_access_or_404(request.user, cluster.organization.slug)
    form = ReporterTokenForm(request.POST or None)
    new = None
    if request.method == "POST":
        services.operator_access(request.user, cluster)
        if form.is_valid():
            try:
                token, key = services.issue_token(user=request.user, cluster=cluster, name=form.cleaned_data["name"])
            except ValidationError as error:
                form.add_error(None, error)
            else:
                # Rendered, not redirected: the key must not wait in a session or a URL for the next page.
                new, form = {"token": token, "key": key}, ReporterTokenForm()
    tokens = (
        ReporterToken.objects.for_org(cluster.organization)
        .filter(cluster=cluster)
        .select_related("created_by", "revoked_by")
    )
    context = {
        "cluster": cluster,
        "can_operate": access.can_operate_clusters,
        "form": form,
        "new": new,
        "tokens": tokens,
        "portal_url": settings.PORTAL_URL.rstrip("/"),
        "guide": install_guide(settings.PORTAL_URL.rstrip("/"), cluster.pk, language=cluster.organization.language),
        "progress_guide": install_guide(
            settings.PORTAL_URL.rstrip("/"), cluster.pk, language=cluster.organization.language, script=fmp_progress
        ),
        "silent_after": cluster.report_interval_seconds * services.SILENT_AFTER_INTERVALS,
    }
    return render_page(request, "workloads/reporting/reporter.html", context, status=400 if form.errors else 200)


reporter.tenant_model = Cluster


def guide_paragraphs(script=fmp_reporter) -> list[str]:
    """A script's install guide (its docstring, without its summary and the paragraph after it), in paragraphs.
    The prose ones are msgids of the workloads catalog: the script stays standard-library English."""
    return script.__doc__.split("\n\n", 2)[2].split("\n\n")


def install_guide(portal_url: str, cluster_id: int, *, language: str = "en", script=fmp_reporter) -> str:
    """The script's own install guide (its docstring) with this portal's address and this cluster's id in place
    of the examples, so the page and the script never say two different things; its prose in the organization's
    language (commands and files have no entry in the catalog, so they stay as they are)."""
    with translation.override(language or "en"):
        guide = "\n\n".join(
            _(paragraph.rstrip("\n")) + paragraph[len(paragraph.rstrip("\n")) :]
            for paragraph in guide_paragraphs(script)
        )
    guide = guide.replace(fmp_reporter.EXAMPLE_PORTAL, portal_url)
    return guide.replace(f"FMP_CLUSTER_ID={fmp_reporter.EXAMPLE_CLUSTER}", f"FMP_CLUSTER_ID={cluster_id}").replace(
        f"cluster id {fmp_reporter.EXAMPLE_CLUSTER}", f"cluster id {cluster_id}"
    )


@login_required
@require_POST
def revoke(request, pk: int):
    token = get_object_or_404(
        ReporterToken.objects.visible_to(request.user).select_related("cluster__organization"), pk=pk
    )
    services.revoke_token(user=request.user, token=token)
    messages.success(request, _("Reporter token “%(name)s” revoked: it no longer works.") % {"name": token.name})
    return redirect("reporting:cluster", pk=token.cluster_id)


revoke.tenant_model = ReporterToken


@require_GET
def script(request):
    """The head-node script (no secret in it): `curl -O <portal>/reporter/fmp_reporter.py` on the head node."""
    return FileResponse(SCRIPT.open("rb"), as_attachment=True, filename="fmp_reporter.py", content_type="text/x-python")


@require_GET
def progress_script(request):
    """The training-log follower that runs beside it (no secret in it either)."""
    return FileResponse(
        PROGRESS_SCRIPT.open("rb"), as_attachment=True, filename="fmp_progress.py", content_type="text/x-python"
    )
