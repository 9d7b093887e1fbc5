"""Writes to support cases. Views, serializers and tasks parse input and call one function here; each checks who
may act through tenants.access (or acts as tenants.access.SYSTEM, the portal itself), validates, writes under a
row lock and appends the case's history (CaseEvent) itself. Email goes out from support.notifications, by a
task enqueued only when the transaction commits.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone
from django.utils.translation import gettext as _

from portal import queue
from tenants.access import SYSTEM, OrgAccess, get_org_access_or_404, is_program_staff, require
from tenants.models import Organization
from workloads.clusters.models import Cluster, ClusterNode
from workloads.records.models import Workload
from workloads.support.models import CaseEvent, SupportCase
from workloads.support.notifications import NOTIFIED_KINDS
from workloads.support.tasks import notify_case_event

Status = SupportCase.Status


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()  # "not part of this change", as opposed to None ("clear it")


def _acting(user, organization: Organization) -> OrgAccess | None:
    """Who acts on the org's cases: a person, through the gate (403 when they may not write there), or None
    when it is the portal itself (tenants.access.SYSTEM: a health incident, a failed validation)."""
    if user is SYSTEM:
        return None
    access = get_org_access_or_404(user, organization.slug)
    access.require(access.can_write, _("You cannot act on this organization's support cases."))
    return access


def _person(user):
    """The actor recorded in the history: the person, or nobody for the portal itself (shown as "system")."""
    return None if user is SYSTEM else user


def _locked_case(case: SupportCase) -> SupportCase:
    return (
        SupportCase.objects.select_for_update(of=("self",))
        .select_related("organization", "assignee", "workload", "cluster", "node")
        .get(pk=case.pk)
    )


def _add_event(
    case: SupportCase, *, user, kind: str, internal: bool = False, body: str = "", old="", new="", written=None
) -> CaseEvent:
    event = CaseEvent.objects.create(
        organization_id=case.organization_id,
        case=case,
        actor=_person(user),
        kind=kind,
        internal=internal,
        body=body,
        body_written=written or {},
        old_value=str(old)[:200],
        new_value=str(new)[:200],
    )
    if not internal:
        # Only what the tenant can see moves "last update": an internal note must not show through it.
        case.updated_at = event.created_at
    if kind in NOTIFIED_KINDS:
        # Enqueued only if the transaction commits: a rolled-back change mails nobody.
        queue.send_on_commit(notify_case_event, event.pk)
    return event


def case_history(user, case: SupportCase):
    """The case's history as `user` may read it, oldest first: tenants never see internal notes."""
    return CaseEvent.objects.readable_by(user).filter(case=case).select_related("actor").order_by("created_at", "pk")


def _check_links(organization: Organization, *, workload: Workload | None, cluster: Cluster | None) -> None:
    """A case links only its own organization's workload or cluster."""
    if workload is not None and workload.organization_id != organization.pk:
        raise ValidationError({"workload": _("This workload belongs to another organization.")})
    if cluster is not None and cluster.organization_id != organization.pk:
        raise ValidationError({"cluster": _("This cluster belongs to another organization.")})


def find_node(
    organization: Organization, cluster: Cluster | None, node: ClusterNode | str | None
) -> ClusterNode | None:
    """The node a case is about, given as a node or as what a person has at hand: an instance id (i-0abc…) or a
    host name (ip-10-1-0-7, as Slurm names it). Looked up in `cluster`, or in all the organization's clusters when
    none is named; its cluster is then the case's cluster."""
    if node is None or node == "":
        return None
    if isinstance(node, ClusterNode):
        if cluster is not None and node.cluster_id != cluster.pk:
            raise ValidationError({"node": _("This node belongs to another cluster.")})
        if node.organization_id != organization.pk:
            raise ValidationError({"node": _("This node belongs to another organization.")})
        return node
    ref = node.strip()
    nodes = ClusterNode.objects.for_org(organization).filter(Q(instance_id=ref) | Q(hostname=ref))
    if cluster is not None:
        nodes = nodes.filter(cluster=cluster)
    # A host name comes back when the cloud replaces a node: the one still there, else the last one seen.
    found = list(nodes.select_related("cluster").order_by(F("gone_at").desc(nulls_first=True), "-last_seen_at")[:20])
    if not found:
        if cluster is not None:
            message = _("Cluster %(cluster)s has no node “%(node)s” (an instance id or a host name).")
        else:
            message = _("None of the organization's clusters has a node “%(node)s” (an instance id or a host name).")
        raise ValidationError({"node": message % {"node": ref[:80], "cluster": cluster.name if cluster else ""}})
    # A host name lives on after its node: a node still there is the one meant over ones gone with old clusters.
    present = [n for n in found if n.gone_at is None]
    found = present or found
    if len({n.cluster_id for n in found}) > 1:
        raise ValidationError(
            {"node": _("More than one cluster has a node “%(node)s”: name the cluster too.") % {"node": ref[:80]}}
        )
    return found[0]


def _node_for_change(case: SupportCase, cluster: Cluster | None, node, *, cluster_named: bool) -> ClusterNode | None:
    """The node a change names: in the cluster named with it; named alone, in the case's cluster first, else in
    any of the organization's clusters, and then it brings its cluster."""
    if cluster_named or cluster is None:
        return find_node(case.organization, cluster, node)
    try:
        return find_node(case.organization, cluster, node)
    except ValidationError:
        return find_node(case.organization, None, node)


def _link_label(cluster: Cluster | None, node: ClusterNode | None) -> str:
    if cluster is None:
        return ""
    return f"{cluster.name} · {node.instance_id}" if node else cluster.name


@transaction.atomic
def open_case(
    *,
    user,
    organization: Organization,
    title: str,
    description: str,
    category: str,
    severity: str = SupportCase.Severity.S3,
    workload: Workload | None = None,
    cluster: Cluster | None = None,
    node: ClusterNode | str | None = None,
    assignee=UNSET,
    written: dict[str, tuple[str, str]] | None = None,
) -> SupportCase:
    """Open a case; it is assigned to the org's lead support engineer unless staff (or the portal itself) name
    someone else. It may name a workload, a cluster and one of its nodes (see find_node). `user` may be
    tenants.access.SYSTEM, which passes its (title, description) in each language as `written` (written.py)."""
    access = _acting(user, organization)
    _check_links(organization, workload=workload, cluster=cluster)
    node = find_node(organization, cluster, node)
    if node is not None:
        cluster = node.cluster
    if assignee is UNSET:
        assignee = organization.lead_engineer
    elif access is not None and not access.is_staff:
        raise PermissionDenied(_("Only program staff can assign a case."))
    elif assignee is not None and not is_program_staff(assignee):
        raise ValidationError({"assignee": _("Assign the case to a member of the program staff.")})
    case = SupportCase(
        organization=organization,
        title=(title or "").strip(),
        title_written={code: text[0].strip()[:200] for code, text in (written or {}).items()},
        description=(description or "").strip(),
        category=category,
        severity=severity,
        assignee=assignee,
        workload=workload,
        cluster=cluster,
        node=node,
        opened_by=_person(user),
        opened_by_staff=access is not None and access.is_staff,
        updated_at=timezone.now(),
    )
    case.full_clean()
    case.save()
    descriptions = {code: text[1].strip() for code, text in (written or {}).items()}
    _add_event(case, user=user, kind=CaseEvent.Kind.OPENED, body=case.description, written=descriptions)
    case.save(update_fields=["updated_at"])
    return case


@transaction.atomic
def add_comment(
    *, user, case: SupportCase, body: str, internal: bool = False, written: dict[str, str] | None = None
) -> CaseEvent:
    """A comment (program staff: or an internal note) on the case's history. `user` may be SYSTEM: the portal
    reporting on a condition it watches, with its text in each language as `written` (written.py); that is
    neither the team's reply nor the tenant's answer."""
    access = _acting(user, case.organization)
    if internal and access is not None and not access.is_staff:
        raise PermissionDenied(_("Only program staff can add internal notes."))
    case = _locked_case(case)
    if case.is_closed:
        raise ValidationError({"body": _("This case is closed. Reopen it to add a comment.")})
    body = (body or "").strip()
    if not body:
        raise ValidationError({"body": _("Write something first.")})
    written = {code: text.strip() for code, text in (written or {}).items()}
    event = _add_event(case, user=user, kind=CaseEvent.Kind.COMMENT, internal=internal, body=body, written=written)
    if not internal and access is not None:
        _note_first_response(case, access, event)
        if not access.is_staff and case.status == Status.WAITING_ON_TENANT:
            # The tenant answered: the ball is back with the program team.
            _set_status(case, user=user, status=Status.IN_PROGRESS)
    case.save(update_fields=["updated_at", "first_response_at", "status", "resolved_at"])
    return event


def _note_first_response(case: SupportCase, access: OrgAccess, event: CaseEvent) -> None:
    # Time to first response: the program team's first reply the tenant can read. A case the team
    # opened itself has no such wait, so it keeps no first response.
    if access.is_staff and case.first_response_at is None and not case.opened_by_staff:
        case.first_response_at = event.created_at


TENANT_STATUSES = (Status.OPEN, Status.RESOLVED, Status.CLOSED)


def _set_status(case: SupportCase, *, user, status: str) -> None:
    old = case.status
    was_done, now_done = old in SupportCase.DONE_STATUSES, status in SupportCase.DONE_STATUSES
    if was_done and not now_done:
        case.resolved_at = None  # reopened: the clock runs again
    elif now_done and not was_done:
        case.resolved_at = timezone.now()
    case.status = status
    _add_event(case, user=user, kind=CaseEvent.Kind.STATUS_CHANGED, old=old, new=status)


@transaction.atomic
def update_case(
    *,
    user,
    case: SupportCase,
    status: str = UNSET,
    assignee=UNSET,
    severity: str = UNSET,
    workload: Workload | None = UNSET,
    cluster: Cluster | None = UNSET,
    node: ClusterNode | str | None = UNSET,
    comment: str = "",
) -> SupportCase:
    """Change a case's status (reopening included), assignee, severity, linked workload, cluster or node (a node
    named alone is looked up in the case's cluster, then in the org's, and brings its cluster; a new cluster drops a
    node that is not its own), optionally with a comment;
    each change is one CaseEvent. A closed case accepts nothing until it is reopened."""
    access = _acting(user, case.organization)
    require(access is not None, "The portal itself only opens cases and comments on them.")
    case = _locked_case(case)
    errors: dict[str, str] = {}
    if status is not UNSET and status != case.status:
        if status not in Status.values:
            errors["status"] = _("“%(value)s” is not a case status.") % {"value": status}
        elif not access.is_staff and status not in TENANT_STATUSES:
            raise PermissionDenied(
                _("Only program staff can set a case to “%(status)s”.") % {"status": Status(status).label}
            )
        elif case.is_closed and status not in SupportCase.ACTIVE_STATUSES:
            errors["status"] = _("A closed case can only be reopened.")
        elif status == Status.OPEN and case.is_active:
            errors["status"] = _("Only a resolved or closed case can be reopened.")
    reopening = status is not UNSET and status in SupportCase.ACTIVE_STATUSES and not case.is_active
    changes = (assignee, severity, workload, cluster, node)
    if case.is_closed and not reopening and (comment or any(v is not UNSET for v in changes)):
        errors["status"] = _("This case is closed. Reopen it first.")
    if assignee is not UNSET:
        if not access.is_staff:
            raise PermissionDenied(_("Only program staff can assign a case."))
        if assignee is not None and not is_program_staff(assignee):
            errors["assignee"] = _("Assign the case to a member of the program staff.")
    if severity is not UNSET and severity not in SupportCase.Severity.values:
        errors["severity"] = _("“%(value)s” is not a severity.") % {"value": severity}
    if workload is not UNSET and workload is not None and workload.organization_id != case.organization_id:
        errors["workload"] = _("This workload belongs to another organization.")
    new_cluster, new_node = case.cluster, case.node
    try:
        if cluster is not UNSET:
            _check_links(case.organization, workload=None, cluster=cluster)
            new_cluster = cluster
            if new_node is not None and (cluster is None or new_node.cluster_id != cluster.pk):
                new_node = None
        if node is not UNSET:
            new_node = _node_for_change(case, new_cluster, node, cluster_named=cluster is not UNSET)
            new_cluster = new_node.cluster if new_node is not None else new_cluster
    except ValidationError as error:
        errors.update({field: messages[0] for field, messages in error.message_dict.items()})
    if errors:
        raise ValidationError(errors)

    if status is not UNSET and status != case.status:
        _set_status(case, user=user, status=status)
    if assignee is not UNSET and assignee != case.assignee:
        old = case.assignee.get_username() if case.assignee else ""
        case.assignee = assignee
        new = assignee.get_username() if assignee else ""
        _add_event(case, user=user, kind=CaseEvent.Kind.ASSIGNEE_CHANGED, old=old, new=new)
    if severity is not UNSET and severity != case.severity:
        _add_event(case, user=user, kind=CaseEvent.Kind.SEVERITY_CHANGED, old=case.severity, new=severity)
        case.severity = severity
    if workload is not UNSET and workload != case.workload:
        old = case.workload.name if case.workload else ""
        case.workload = workload
        _add_event(case, user=user, kind=CaseEvent.Kind.LINKED, old=old, new=workload.name if workload else "")
    if (new_cluster, new_node) != (case.cluster, case.node):
        old = _link_label(case.cluster, case.node)
        case.cluster, case.node = new_cluster, new_node
        _add_event(case, user=user, kind=CaseEvent.Kind.LINKED, old=old, new=_link_label(new_cluster, new_node))
    if comment.strip():
        event = _add_event(case, user=user, kind=CaseEvent.Kind.COMMENT, body=comment.strip())
        _note_first_response(case, access, event)
    case.save()
    return case


@transaction.atomic
def link_case(*, user, case: SupportCase, text: str, internal: bool = True) -> CaseEvent:
    """Record on the case's history that something now refers to it (e.g. a weekly-review action item).
    Internal by default: the tenant sees the work, not the program team's meeting."""
    return _add_event(_locked_case(case), user=user, kind=CaseEvent.Kind.LINKED, internal=internal, new=text)
