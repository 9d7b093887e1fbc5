"""Health pages: a cluster's board (nodes × GPUs, refreshed with htmx), the program's open incidents (staff), and
the rules the portal applies — Xid and metric rules, case severities, NCCL baselines, Prometheus sources."""

from __future__ import annotations

import dataclasses
import re
from collections import defaultdict
from decimal import Decimal

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.db.models import OuterRef, Subquery
from django.shortcuts import get_object_or_404, redirect
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from portal.forms import apply_errors
from portal.pages import paginate, render_page
from tenants.access import is_program_manager, is_program_staff, require_program_staff, visible_organizations
from tenants.models import InstanceType
from workloads.clusters.models import Cluster, ClusterNode
from workloads.health.dcgm import METRIC_RULES, OTHER_XID, XID_CATALOG_SOURCE, XID_RULES
from workloads.health.forms import BaselineForm, IncidentFilterForm
from workloads.health.incidents import INCIDENT_SEVERITY, event_summary
from workloads.health.models import HealthEvent, PrometheusSource
from workloads.health.neuron import RULES as NEURON_RULES
from workloads.health.neuron import expected_counts
from workloads.health.telemetry import expected_gpus, gpu_catalog, sources_for
from workloads.health.temperature import TEMPERATURE_RULES
from workloads.validation.models import NcclBaseline, NcclValidation
from workloads.validation.services import save_baseline

SEVERITY_RANK = {HealthEvent.Severity.CRITICAL: 2, HealthEvent.Severity.WARNING: 1, HealthEvent.Severity.INFO: 0}
Kind = HealthEvent.Kind
# What a cell of the board says, in a few characters (the Xid shows its code).
SHORT = {
    Kind.ECC_DBE_VOLATILE: "ECC",
    Kind.ECC_DBE_AGGREGATE: "ecc",
    Kind.REMAPPED_ROWS: "row",
    Kind.ROW_REMAP_FAILURE: "ROW",
    Kind.ROW_REMAP_PENDING: "row",
    Kind.THERMAL: "°C",
    Kind.POWER: "W",
    Kind.MISSING_GPU: "—",
    Kind.NEURON_ECC_UNCORRECTED: "ECC",
    Kind.NEURON_ECC_CORRECTED: "ecc",
    Kind.NEURON_DEVICE_MISSING: "—",
}
INCIDENTS_PAGE = 50


def _visible_cluster(request, pk: int) -> Cluster:
    clusters = Cluster.objects.visible_to(request.user).select_related(
        "organization", "allocation__pool__instance_type"
    )
    return get_object_or_404(clusters, pk=pk)


def board(cluster: Cluster) -> dict:
    """The nodes × GPUs grid: each live node with a cell per GPU, coloured by its worst open event (three queries)."""
    org = cluster.organization
    nodes = sorted(
        ClusterNode.objects.for_org(org).filter(cluster=cluster, gone_at=None),
        key=lambda n: (n.group_name, natural(n.hostname or n.instance_id)),
    )
    events = list(
        HealthEvent.objects.for_org(org)
        .filter(cluster=cluster, resolved_at=None)
        .select_related("case")
        .order_by("-observed_at", "-pk")
    )
    by_gpu: dict[tuple[str, int | None], list[HealthEvent]] = defaultdict(list)
    for event in events:
        by_gpu[(event.instance_id, event.gpu)].append(event)
    catalog = gpu_catalog()
    rows = []
    for node in nodes:
        # A GPU's column, or on Trainium a Neuron device's (workloads.health.neuron).
        neuron_counts = expected_counts(node.instance_type, catalog)
        gpus = expected_gpus(node.instance_type, catalog) or (neuron_counts[0] if neuron_counts else None)
        blank = node.gpu_unsupported or {}
        cells = [
            _cell(gpu, by_gpu.get((node.instance_id, gpu), []), node, blank.get(str(gpu), []))
            for gpu in range(gpus or 0)
        ]
        whole = by_gpu.get((node.instance_id, None), [])  # the node's own events (cloud status, silent exporter)
        every = [*whole, *(e for gpu in range(gpus or 0) for e in by_gpu.get((node.instance_id, gpu), []))]
        busy = None if node.accelerator_utilization is None else f"{node.accelerator_utilization:.0%}"
        rows.append({"node": node, "gpus": gpus, "cells": cells, "events": whole, "state": _state(every, node),
                     "busy": busy, "neuron": neuron_counts is not None})  # fmt: skip
    width = max((len(row["cells"]) for row in rows), default=0)
    for row in rows:  # nodes with fewer GPUs than the widest get empty cells
        if row["gpus"]:
            row["cells"] += [None] * (width - len(row["cells"]))
    return {"rows": rows, "columns": list(range(width)), "open_events": events,
            "accelerators": _accelerators(cluster, nodes, catalog)}  # fmt: skip


def _accelerators(cluster: Cluster, nodes: list[ClusterNode], catalog) -> str:
    """What the board's columns are: "neuron" (Trainium's Neuron devices), "gpu", or "mixed"; a cluster without nodes
    yet is named by its allocation's instance type."""
    types = {node.instance_type for node in nodes}
    if not types and cluster.allocation_id:
        types = {cluster.allocation.pool.instance_type.api_name}
    neuron = {name for name in types if expected_counts(name, catalog) is not None}
    gpu = {name for name in types if expected_gpus(name, catalog) is not None}
    if neuron and gpu:
        return "mixed"
    return "neuron" if neuron else "gpu"


def natural(name: str) -> list:
    """ip-10-1-0-9 before ip-10-1-0-10: the numbers in a name compare as numbers."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def _cell(gpu: int, events: list[HealthEvent], node: ClusterNode, unsupported: list[str]) -> dict:
    kinds = [Kind(kind).label for kind in unsupported if kind in Kind.values]
    return {
        "gpu": gpu,
        "state": _state(events, node),
        "text": " ".join(str(e.code) if e.code is not None else SHORT.get(e.kind, "!") for e in events),
        "title": "\n".join(event_summary(e) for e in events),
        # Fields this GPU gave DCGM's blank for: unread, so the cell's colour says nothing of them.
        "unsupported": ", ".join(str(kind) for kind in kinds),
    }


def _state(events: list[HealthEvent], node: ClusterNode) -> str:
    """A cell's colour: critical, warning, ok, or unknown (no GPU reading ever came for the node)."""
    if events:
        worst = max(SEVERITY_RANK.get(e.severity, 0) for e in events)
        return "critical" if worst == 2 else "warning"
    return "ok" if node.gpu_read_at is not None else "unknown"


@login_required
@require_GET
def health_board(request, pk: int):
    cluster = _visible_cluster(request, pk)
    org = cluster.organization
    resolved = (
        HealthEvent.objects.for_org(org)
        .filter(cluster=cluster)
        .exclude(resolved_at=None)
        .select_related("case")
        .order_by("-resolved_at")[:20]
    )
    context = {
        "cluster": cluster,
        "board": board(cluster),
        "resolved": list(resolved),
        "sources": sources_for(org),
        "is_staff": is_program_staff(request.user),  # a source's error names the program's own endpoints
        "now": timezone.now(),
    }
    return render_page(request, "workloads/health/board.html", context, fragment="health-board")


health_board.tenant_model = Cluster


@login_required
@require_GET
def incidents(request):
    """Open incidents across the program, for staff: critical events by organization and age, with their case;
    clusters whose interconnect is suspect; reporters gone silent."""
    require_program_staff(request.user)
    form = IncidentFilterForm(request.GET or None, organizations=visible_organizations(request.user).order_by("name"))
    events = (
        HealthEvent.objects.visible_to(request.user)
        .filter(resolved_at=None, severity=HealthEvent.Severity.CRITICAL)
        .select_related("organization", "cluster", "case")
        .order_by("organization__name", "observed_at", "pk")
    )
    clusters = Cluster.objects.visible_to(request.user).exclude(status=Cluster.Status.DELETED)
    if form.is_valid() and form.cleaned_data.get("organization"):
        events = events.filter(organization=form.cleaned_data["organization"])
        clusters = clusters.filter(organization=form.cleaned_data["organization"])
    latest = NcclValidation.objects.visible_to(request.user).filter(cluster=OuterRef("pk")).order_by("-submitted_at")
    suspect = list(
        clusters.exclude(interconnect_suspect_since=None)
        .select_related("organization")
        .annotate(latest_run=Subquery(latest.values("pk")[:1]))
        .order_by("interconnect_suspect_since")
    )
    silent = clusters.exclude(reporter_silent_since=None).select_related("organization")
    runs = NcclValidation.objects.visible_to(request.user).defer("log").in_bulk([c.latest_run for c in suspect])
    context = {
        "form": form,
        "page": paginate(request, events, INCIDENTS_PAGE),
        "suspect": [(c, runs.get(c.latest_run)) for c in suspect],
        "silent": list(silent.order_by("reporter_silent_since")),
        "now": timezone.now(),
    }
    return render_page(request, "workloads/health/incidents.html", context, fragment="incident-table",
                       status=400 if form.errors else 200)  # fmt: skip


@login_required
def health_rules(request):
    """What the portal checks and how it answers, for staff to read; program managers edit the NCCL baselines."""
    require_program_staff(request.user)
    manager = is_program_manager(request.user)
    form = BaselineForm(request.POST or None, instance_types=InstanceType.objects.order_by("api_name"))
    if request.method == "POST":
        if not manager:
            messages.error(request, _("Only a program manager can change the baselines."))
            return redirect("health:rules")
        if form.is_valid():
            data = form.cleaned_data
            try:
                save_baseline(user=request.user, **data)
            except ValidationError as error:
                apply_errors(form, error)
            else:
                messages.success(
                    request,
                    _("Baseline saved: %(type)s on %(nodes)d nodes.")
                    % {"type": data["instance_type"], "nodes": data["nodes"]},
                )
                return redirect("health:rules")
    context = {
        "xid_rules": [_translated(rule) for rule in (*XID_RULES.values(), OTHER_XID)],
        "xid_source": XID_CATALOG_SOURCE,
        "metric_rules": [_translated(rule) for rule in (*METRIC_RULES, *TEMPERATURE_RULES)],
        "incident_rules": [_translated(rule, words=("why",)) for rule in INCIDENT_SEVERITY],
        "neuron_rules": NEURON_RULES,
        "baselines": NcclBaseline.objects.select_related("instance_type", "updated_by"),
        "sources": PrometheusSource.objects.visible_to(request.user).select_related("organization"),
        "form": form,
        "can_edit": manager,
        "default_fraction": Decimal("0.90"),
    }
    return render_page(request, "workloads/health/rules.html", context, status=400 if form.errors else 200)


# The rule tables' words (meanings, conditions, why, actions) in the reader's language; codes, metric names, kinds and
# NVIDIA's mnemonics and resolution buckets are identifiers and stay as they are.
_RULE_WORDS = ("name", "condition", "why", "action", "severity")


def _translated(rule, *, words: tuple[str, ...] = _RULE_WORDS) -> dict:
    row = dataclasses.asdict(rule)
    for field in words:
        if row.get(field):
            row[field] = _(str(row[field]))
    return row
