"""Incidents become support cases, written by the portal itself (tenants.access.SYSTEM): a critical GPU or node
event, or an interconnect check under its baseline, opens a case for the organization — or, when the cluster
already has an open case of that category, adds to it. The case says what was seen (instance, GPU, code) and
what to do about it on this kind of cluster. The engineer assigned to the organization is notified as for any
case event. When the condition clears, the case is told so; it stays for a person to close.

The severity comes from INCIDENT_SEVERITY, a table staff can read on the health rules page. Case text is written
once, in the organization's language (Organization.language): it is a record the tenant reads first, and a stored
text cannot follow each reader's language as a page does. Commands, instance ids and codes stay as they are.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import suppress
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from tenants.access import SYSTEM
from workloads.clusters.models import Cluster
from workloads.health import temperature
from workloads.health.dcgm import Action, xid_rule
from workloads.health.models import HealthEvent
from workloads.support.models import SupportCase
from workloads.support.services import add_comment, open_case
from workloads.support.written import in_each_language, in_language_of

Kind = HealthEvent.Kind
S1, S2, S3 = SupportCase.Severity.S1, SupportCase.Severity.S2, SupportCase.Severity.S3


@dataclass(frozen=True)
class IncidentRule:
    kind: str
    code: int | None  # an Xid; None: any event of the kind
    severity: str
    why: str


# Read top to bottom: the first rule matching an event's kind (and Xid) gives the case's severity.
INCIDENT_SEVERITY: tuple[IncidentRule, ...] = (
    IncidentRule(Kind.GPU_XID, 79, S2, "GPU fallen off the bus: the node's jobs fail until it is replaced."),
    IncidentRule(Kind.GPU_XID, 95, S2, "Uncontained ECC error: other jobs on the node may have bad data."),
    IncidentRule(Kind.GPU_XID, 64, S2, "Row remap failed: the GPU's memory can no longer be trusted."),
    IncidentRule(Kind.GPU_XID, 74, S2, "NVLink error: collectives on the node fail or slow down."),
    IncidentRule(Kind.GPU_XID, 48, S2, "Double-bit ECC error: the running job was hit."),
    IncidentRule(
        Kind.GPU_XID,
        None,
        S3,
        "Other critical Xids (94, 119, 120, 140, 143, 154, a fatal 144-150): reset or reboot soon.",
    ),
    IncidentRule(Kind.ROW_REMAP_FAILURE, None, S2, "Row remap failed: replace the node."),
    IncidentRule(Kind.ECC_DBE_VOLATILE, None, S2, "Uncorrectable memory errors on a running GPU."),
    IncidentRule(Kind.MISSING_GPU, None, S2, "A GPU stopped reporting: usually fallen off the bus."),
    IncidentRule(Kind.THERMAL, None, S2, "A GPU near its shutdown temperature: it powers off and fails the jobs."),
    IncidentRule(Kind.NODE_FAILURE, None, S2, "The cloud reports the node failed."),
    IncidentRule(Kind.NODE_NOT_FOUND, None, S2, "The cloud lost the node."),
    IncidentRule("nccl", None, S3, "Interconnect under its baseline: jobs run, slower than they should."),
    IncidentRule("", None, S3, "Any other critical event."),
)


def case_severity(kind: str, code: int | None = None) -> str:
    for rule in INCIDENT_SEVERITY:
        if rule.kind in (kind, "") and rule.code in (code, None):
            return rule.severity
    return S3


def recommended_action(cluster: Cluster, action: str, *, instance_id: str, gpu: int | None, host: str = "") -> str:
    """What to do, in the commands of this kind of cluster."""
    node = host or instance_id
    if action == Action.REPLACE_NODE:
        if cluster.kind == Cluster.Kind.PARALLELCLUSTER:
            return _(
                "Replace the node: drain it (%(drain)s), then terminate the instance (%(terminate)s); "
                "ParallelCluster launches a new one."
            ) % {
                "drain": f"scontrol update nodename={node} state=drain reason=health",
                "terminate": f"aws ec2 terminate-instances --instance-ids {instance_id}",
            }
        return _("Replace the node: %(command)s") % {
            "command": "aws sagemaker batch-replace-cluster-nodes "
            f"--cluster-name {cluster.cloud_name} --node-ids {instance_id}"
        }
    if action == Action.REBOOT_NODE:
        if cluster.kind == Cluster.Kind.PARALLELCLUSTER:
            command = f"scontrol reboot ASAP nextstate=resume reason=health {node}"
        else:
            command = (
                f"aws sagemaker batch-reboot-cluster-nodes --cluster-name {cluster.cloud_name} --node-ids {instance_id}"
            )
        return _("Reboot the node: %(command)s") % {"command": command}
    if action == Action.RESET_GPU:
        which = f" -i {gpu}" if gpu is not None else ""
        return _("Reset the GPU when no job uses it (%(command)s on %(node)s), or reboot the node.") % {
            "command": f"nvidia-smi -r{which}",
            "node": node,
        }
    if action == Action.RESTART_JOB:
        return _("Restart the job; open a case if the same error keeps coming back.")
    return _("Watch it: nothing to do yet.")


def event_summary(event: HealthEvent) -> str:
    """What the event is, in the active language. The stored message was written in English when the reading came
    in; an Xid is said again from its rule (the exporter's own err_msg, for a code without one, stays as sent), and
    in another language an other event by its kind."""
    if event.kind == Kind.GPU_XID and event.code is not None:
        rule = xid_rule(event.code)
        name = _(rule.name) if rule.code is not None else event.message.partition(": ")[2] or _(rule.name)
        return _("Xid %(code)d on GPU %(gpu)s: %(name)s") % {"code": event.code, "gpu": event.gpu, "name": name}
    if event.kind == Kind.THERMAL and (said := temperature.translated(event.message)):
        return said  # the temperature and the threshold, in the reader's words
    if translation.get_language() in (None, "en") or translation.get_language().startswith("en-"):
        return event.message
    if event.gpu is not None:
        return _("%(kind)s on GPU %(gpu)d") % {"kind": event.get_kind_display(), "gpu": event.gpu}
    return str(event.get_kind_display())


def _where(event: HealthEvent, *, hostname: bool = True) -> str:
    where = _("instance %(id)s") % {"id": event.instance_id}
    if hostname and event.node is not None and event.node.hostname:
        where += f" ({event.node.hostname})"
    if event.gpu is not None:
        where += ", " + _("GPU %(gpu)d") % {"gpu": event.gpu}
    return where


def _event_line(event: HealthEvent, cluster: Cluster) -> str:
    code = f", Xid {event.code}" if event.code is not None else ""
    seen = timezone.localtime(event.observed_at).strftime("%Y-%m-%d %H:%M")
    action = recommended_action(
        cluster,
        event.action,
        instance_id=event.instance_id,
        gpu=event.gpu,
        host=event.node.hostname if event.node else "",
    )
    seen_text = _("seen %(when)s (%(source)s)") % {"when": seen, "source": event.get_source_display()}
    return f"- {event_summary(event)} — {_where(event)}{code}, {seen_text}.\n  {action}"


def open_case_for(cluster: Cluster, *, category: str) -> SupportCase | None:
    """The cluster's open case of this category, newest first: where new incidents of the cluster go."""
    return (
        SupportCase.objects.for_org(cluster.organization)
        .active()
        .filter(cluster=cluster, category=category)
        .order_by("-created_at", "-pk")
        .first()
    )


def report(cluster: Cluster, *, category: str, severity: str, compose: Callable[[], tuple[str, str]]) -> SupportCase:
    """Open a case for the incident, or add it to the cluster's open case of the same category. `compose()` says
    the (title, body) in the active language: it is called in each language (support.written), the case keeps
    the organization's as its text and shows every reader theirs."""
    written = in_each_language(compose)
    title, body = in_language_of(cluster.organization, written)
    case = open_case_for(cluster, category=category)
    if case is None:
        return open_case(
            user=SYSTEM,
            organization=cluster.organization,
            title=title[:200],
            description=body,
            category=category,
            severity=severity,
            workload=cluster.workload,
            cluster=cluster,
            written=written,
        )

    def note(title: str, body: str) -> str:
        if severity < case.severity:  # "s1" < "s2": more severe than the case says
            body += "\n\n" + _("Suggested severity: %(severity)s.") % {"severity": severity.upper()}
        return f"{title}\n\n{body}"

    notes = in_each_language(lambda: note(*written[translation.get_language()]))
    add_comment(user=SYSTEM, case=case, body=in_language_of(cluster.organization, notes), written=notes)
    return case


def case_language(cluster: Cluster) -> translation.override:
    """Text a case keeps is written in the organization's language, whoever's request or task produced it."""
    return translation.override(cluster.organization.language or "en")


def report_health(cluster: Cluster, *, opened: Iterable[HealthEvent], cleared: Iterable[HealthEvent]) -> None:
    """Critical events just opened go to a case (one per poll, listing them all); events that cleared and had a
    case say so on it. Runs inside the transaction that wrote the events. The portal's text is written in every
    language (support.written)."""
    critical = [e for e in opened if e.severity == HealthEvent.Severity.CRITICAL and e.case_id is None]
    if critical:
        severity = min(case_severity(e.kind, e.code) for e in critical)  # "s1" < "s2": the most severe

        def compose() -> tuple[str, str]:
            first = critical[0]
            if len(critical) > 1:
                title = _("%(event)s on %(instance)s and %(more)d more — cluster %(cluster)s")
            else:
                title = _("%(event)s on %(instance)s — cluster %(cluster)s")
            title %= {
                "event": event_summary(first),
                "instance": first.instance_id,
                "more": len(critical) - 1,
                "cluster": cluster.name,
            }
            body = _("The portal saw on cluster %(cluster)s:") % {"cluster": cluster.name}
            return title, body + "\n" + "\n".join(_event_line(e, cluster) for e in critical)

        case = report(cluster, category=SupportCase.Category.NODE_HEALTH, severity=severity, compose=compose)
        HealthEvent.objects.filter(pk__in=[e.pk for e in critical]).update(case=case)
    by_case: dict[int, list[HealthEvent]] = {}
    for event in cleared:
        if event.case_id is not None:
            by_case.setdefault(event.case_id, []).append(event)
    for case in SupportCase.objects.for_org(cluster.organization).filter(pk__in=by_case):

        def cleared_note(events: list[HealthEvent] = by_case[case.pk]) -> str:
            lines = "\n".join(f"- {event_summary(e)} — " + _where(e, hostname=False) for e in events)
            return _("Condition cleared: the readings are normal again.") + "\n" + lines

        notes = in_each_language(cleared_note)
        with suppress(ValidationError):  # a closed case takes no comment: someone already dealt with it
            add_comment(user=SYSTEM, case=case, body=in_language_of(cluster.organization, notes), written=notes)
