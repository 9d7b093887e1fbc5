"""Recording an nccl-tests run a cluster posted: parsed whole (a bad line refuses it), judged against the baseline
for its instance type and node count, kept with its per-size bus bandwidth for the chart. A run under its
baseline marks the cluster "interconnect suspect" and goes to a networking case (workloads.health.incidents); the
next run that passes clears the mark and says so on the case.
"""

from __future__ import annotations

import hashlib
from contextlib import suppress
from datetime import datetime
from decimal import Decimal

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Sum
from django.utils import timezone
from django.utils.translation import gettext as _

from tenants.access import SYSTEM, require_program_manager
from tenants.models import InstanceType
from workloads.clusters.models import Cluster, ClusterInstanceGroup
from workloads.health.incidents import case_language, case_severity, open_case_for, report
from workloads.support.models import SupportCase
from workloads.support.services import add_comment
from workloads.support.written import in_each_language, in_language_of
from workloads.telemetry_errors import field_errors
from workloads.validation.models import NcclBaseline, NcclValidation
from workloads.validation.nccl import (
    P5_MULTINODE_BASELINE,
    busbw_ceiling,
    check_plausible,
    format_size,
    judge,
    parse_nccl_log,
)
from workloads.validation.nccom import TRN1_MULTINODE_BASELINE, is_nccom, parse_nccom_log

MAX_LOG_CHARS = 1_000_000  # kept for support to read; a longer log is kept cut, with a note
MAX_NODES = 10_000
DEFAULT_BASELINES = (P5_MULTINODE_BASELINE, TRN1_MULTINODE_BASELINE)


def worker_type(cluster: Cluster) -> str:
    """The instance type the test ran on: the cluster's largest worker group."""
    groups = ClusterInstanceGroup.objects.for_org(cluster.organization).filter(
        cluster=cluster, role=ClusterInstanceGroup.Role.WORKER
    )
    group = groups.order_by("-instance_count", "name").first()
    return group.instance_type if group else cluster.allocation.pool.instance_type.api_name


def cluster_nodes(cluster: Cluster) -> int | None:
    """How many worker nodes the cluster has (its worker groups); None when it has no group on record."""
    groups = ClusterInstanceGroup.objects.for_org(cluster.organization).filter(
        cluster=cluster, role=ClusterInstanceGroup.Role.WORKER
    )
    return groups.aggregate(total=Sum("instance_count"))["total"]


def baseline_for(instance_type: str, nodes: int, collective: str = "all_reduce") -> NcclBaseline | None:
    """The baseline of this collective for this many nodes, else the nearest smaller multi-node one (a
    large-message peak holds across node counts once the run crosses EFA); a single-node run has only its own.
    A collective has only its own baselines: alltoall is never judged by all_reduce's."""
    baselines = NcclBaseline.objects.filter(
        instance_type__api_name=instance_type, collective=collective, nodes__lte=nodes
    )
    if nodes > 1:
        baselines = baselines.filter(nodes__gt=1)
    return baselines.order_by("-nodes").first()


@transaction.atomic
def record_validation(
    *,
    cluster: Cluster,
    log: str,
    nodes: int | None = None,
    collective: str | None = None,
    actor=None,
    now: datetime | None = None,
) -> tuple[NcclValidation, bool]:
    """The run of this log and whether it is new: the same log posted again (a reporter's retry) is the run
    already kept, judged once. Raises ValidationError (a bad line named, an impossible value) and then keeps
    nothing.

    The collective is the log's own word (nccl-tests' banner or the binary its command line names), else the
    poster's `collective`; a log naming one and a poster another is refused. Neither: a table of a reduction
    with no root (all_reduce_perf's shape) is taken as all_reduce, anything else is kept unjudged."""
    with field_errors("log"):
        if is_nccom(log):  # Trainium's nccom-test: the same run shape, its node count from its -N
            nccom = parse_nccom_log(log)
            run = nccom.run
            if nccom.nodes is not None and nodes is not None and nodes != nccom.nodes:
                message = _("The log ran on %(n)d nodes (its -N), not %(given)d.") % {"n": nccom.nodes, "given": nodes}
                raise ValidationError({"nodes": message})
            nodes = nccom.nodes if nccom.nodes is not None else nodes
        else:
            run = parse_nccl_log(log)
    if run.collective is not None and collective and collective != run.collective:
        message = _("The log ran %(log)s, not %(given)s.") % {"log": run.collective, "given": collective}
        raise ValidationError({"collective": message})
    collective = run.collective or collective or _shape(run)
    if run.hosts:
        counted = len(run.hosts)
        if nodes is not None and nodes != counted:
            message = _("The log ran on %(n)d hosts (its Rank lines), not %(given)d.") % {"n": counted, "given": nodes}
            raise ValidationError({"nodes": message})
        nodes = counted
    if nodes is None:
        raise ValidationError({"nodes": _("The log does not say on how many nodes it ran: give nodes.")})
    if not 1 <= nodes <= MAX_NODES:
        raise ValidationError({"nodes": _("Between 1 and %(max)d.") % {"max": MAX_NODES}})
    if (total := cluster_nodes(cluster)) is not None and nodes > total:
        message = _("The run names %(n)d nodes; cluster %(cluster)s has %(total)d.") % {
            "n": nodes,
            "cluster": cluster.name,
            "total": total,
        }
        raise ValidationError({"nodes": message})
    instance_type = worker_type(cluster)
    efa_gbps = InstanceType.objects.filter(api_name=instance_type).values_list("efa_gbps", flat=True).first()
    with field_errors("log"):
        check_plausible(run, ceiling_gbps=busbw_ceiling(instance_type, efa_gbps or 0))
    # One cluster's runs one at a time: a run and its retry never both pass the check below, nor open two cases.
    Cluster.objects.select_for_update().filter(pk=cluster.pk).first()
    digest = hashlib.sha256(log.encode()).hexdigest()
    if kept := NcclValidation.objects.for_org(cluster.organization).filter(cluster=cluster, log_digest=digest).first():
        return kept, False
    baseline = baseline_for(instance_type, nodes, collective) if collective else None
    validation = NcclValidation(
        organization_id=cluster.organization_id,
        cluster=cluster,
        instance_type=instance_type,
        collective=collective,
        nodes=nodes,
        ranks=run.ranks,
        hosts=list(run.hosts),
        rows=[[row.size_bytes, row.out_of_place.busbw_gbps, row.in_place.busbw_gbps] for row in run.rows],
        peak_busbw_gbps=run.peak_busbw_gbps,
        peak_size_bytes=run.peak_size_bytes,
        avg_busbw_gbps=run.avg_busbw_gbps,
        out_of_bounds=run.out_of_bounds,
        elided=run.elided,
        log=log if len(log) <= MAX_LOG_CHARS else log[:MAX_LOG_CHARS] + "\n[… cut: the log was longer]\n",
        log_digest=digest,
        submitted_by=actor if actor is not None and actor.is_authenticated else None,
    )
    # The verdict's reasons are kept and go into the case: written in the organization's language.
    if not collective:
        validation.verdict = NcclValidation.Verdict.NO_BASELINE
        with case_language(cluster):
            validation.reasons = [
                _(
                    "The log does not say which test ran (nccl-tests before 2.16 print no banner): post it again "
                    "with its collective, e.g. alltoall, to have it judged."
                )
            ]
    elif baseline is None:
        validation.verdict = NcclValidation.Verdict.NO_BASELINE
        with case_language(cluster):
            validation.reasons = [
                _(
                    "No %(collective)s baseline for %(type)s on %(nodes)d nodes: not judged; program staff set one "
                    "on the health rules page."
                )
                % {"collective": collective, "type": instance_type, "nodes": nodes}
            ]
    else:
        with case_language(cluster):
            judgement = judge(run, baseline.busbw_gbps, float(baseline.min_fraction))
        validation.baseline = baseline
        validation.baseline_busbw_gbps, validation.baseline_nodes = baseline.busbw_gbps, baseline.nodes
        validation.min_fraction, validation.fraction = baseline.min_fraction, judgement.fraction
        validation.wrong_values = judgement.wrong_values
        validation.verdict = judgement.verdict
        validation.reasons = list(judgement.reasons)
    validation.save()
    _follow_up(cluster, validation, run, now=now or timezone.now())
    return validation, True


def _shape(run) -> str:
    """An unnamed log's collective from its table. A reduction op with root -1 (or no root column) is all_reduce_perf's
    shape, or reduce_scatter_perf's, which its table cannot tell apart: taken as all_reduce, the test clusters
    run (a reduce_scatter log should be posted with its collective). alltoall, all_gather, broadcast... print
    "none" or a root: unjudged."""
    reduction = all(row.redop not in (None, "none") and row.root in (None, -1) for row in run.rows)
    return "all_reduce" if reduction else ""


def _follow_up(cluster: Cluster, validation: NcclValidation, run, *, now: datetime) -> None:
    """A suspect run opens (or adds to) the cluster's networking case; a passing one after it says the condition
    cleared. The portal's text is composed in every language (support.written)."""
    if validation.verdict == NcclValidation.Verdict.SUSPECT:
        Cluster.objects.filter(pk=cluster.pk, interconnect_suspect_since=None).update(interconnect_suspect_since=now)
        case = report(
            cluster,
            category=SupportCase.Category.NETWORKING,
            severity=case_severity("nccl"),
            compose=lambda: _suspect_text(cluster, validation, run),
        )
        NcclValidation.objects.filter(pk=validation.pk).update(case=case)
        validation.case = case
    elif validation.verdict == NcclValidation.Verdict.PASSED and cluster.interconnect_suspect_since is not None:
        Cluster.objects.filter(pk=cluster.pk).update(interconnect_suspect_since=None)
        case = open_case_for(cluster, category=SupportCase.Category.NETWORKING)
        if case is not None and NcclValidation.objects.filter(case=case).exists():
            notes = in_each_language(
                lambda: (
                    _("Condition cleared: a later nccl-tests run reached %(peak)s GB/s (%(fraction)s of the baseline).")
                    % {"peak": f"{validation.peak_busbw_gbps:g}", "fraction": f"{validation.fraction:.0%}"}
                )
            )
            with suppress(ValidationError):
                add_comment(user=SYSTEM, case=case, body=in_language_of(cluster.organization, notes), written=notes)


def _suspect_text(cluster: Cluster, validation: NcclValidation, run) -> tuple[str, str]:
    """The suspect case's (title, body) in the active language; the judgement's reasons are said again in it."""
    reasons = judge(run, validation.baseline_busbw_gbps, float(validation.min_fraction)).reasons
    figures = {
        "cluster": cluster.name,
        "collective": validation.collective,
        "peak": f"{validation.peak_busbw_gbps:g}",
        "nodes": validation.nodes,
        "type": validation.instance_type,
        "size": format_size(validation.peak_size_bytes),
        "average": f"{validation.avg_busbw_gbps:g} GB/s"
        if validation.avg_busbw_gbps is not None
        else _("not reported"),
        "baseline": f"{validation.baseline_busbw_gbps:g}",
        "baseline_nodes": validation.baseline_nodes,
    }
    title = _("Interconnect suspect on cluster %(cluster)s: %(collective)s peak %(peak)s GB/s on %(nodes)d nodes")
    body = (
        _(
            "An nccl-tests run on %(nodes)d × %(type)s reached %(peak)s GB/s at %(size)s (average %(average)s), "
            "against a baseline of %(baseline)s GB/s on %(baseline_nodes)d nodes."
        )
        % figures
        + "\n"
        + "\n".join(f"- {reason}" for reason in reasons)
        + "\n"
        + _(
            "Check EFA on every node (fi_info -p efa; the EFA exporter's error counters), the aws-ofi-nccl and "
            "NCCL versions, and run the test again node pair by node pair to find the slow one."
        )
    )
    return title % figures, body


def seed_baselines() -> None:
    """The catalog's default baselines (the migration seeds them; this puts them back, e.g. after a test flush)."""
    for default in DEFAULT_BASELINES:
        instance_type = InstanceType.objects.filter(api_name=default.instance_type).first()
        if instance_type is not None:
            NcclBaseline.objects.get_or_create(
                instance_type=instance_type,
                nodes=default.nodes,
                collective=default.collective,
                defaults={"size_bytes": default.size_bytes, "busbw_gbps": default.busbw_gbps, "source": default.source},
            )


def save_baseline(*, user, instance_type: InstanceType, nodes: int, busbw_gbps: float, size_bytes: int,
                  min_fraction: Decimal, source: str = "", collective: str = "all_reduce") -> NcclBaseline:  # fmt: skip
    """Add or change the baseline for a type, collective and node count (program managers, on the health rules
    page)."""
    require_program_manager(user)
    baseline, _created = NcclBaseline.objects.update_or_create(
        instance_type=instance_type,
        collective=collective,
        nodes=nodes,
        defaults={
            "busbw_gbps": busbw_gbps,
            "size_bytes": size_bytes,
            "min_fraction": min_fraction,
            "source": source,
            "updated_by": user,
        },
    )
    return baseline
