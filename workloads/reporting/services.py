"""Reporter tokens (issued and revoked from the cluster page) and the reporter's heartbeat: a cluster whose
reporter has posted nothing for three of its intervals is marked silent, and the jobs it last saw running are
shown as "state unknown" instead of running forever."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from tenants.access import get_org_access_or_404
from tenants.audit import record_audit
from workloads.clusters.models import Cluster
from workloads.jobs.models import Job
from workloads.jobs.services import flag_jobs_on_gone_nodes, flag_jobs_unknown
from workloads.reporting.models import ReporterToken

logger = logging.getLogger("portal.tokens")

# What the audit trail calls the token actions recorded here (registered by workloads.apps).
AUDIT_ACTIONS = {
    "reporter_token.issue": gettext_lazy("issued a reporter token for the cluster"),
    "reporter_token.revoke": gettext_lazy("revoked a reporter token of the cluster"),
}
AUDIT_DETAILS = {"token": (gettext_lazy("Reporter token"), None)}  # its name and first characters
TOKEN_DAYS = 365
MAX_ACTIVE_TOKENS = 5  # per cluster: one for the head node, a few while rotating
SILENT_AFTER_INTERVALS = 3


def operator_access(user, cluster: Cluster):
    access = get_org_access_or_404(user, cluster.organization.slug)
    access.require(
        access.can_operate_clusters, _("Only the organization's members and program managers manage tokens.")
    )
    return access


@transaction.atomic
def issue_token(*, user, cluster: Cluster, name: str) -> tuple[ReporterToken, str]:
    """A new reporter token for the cluster and its key, shown once and never stored."""
    operator_access(user, cluster)
    Cluster.objects.select_for_update().filter(pk=cluster.pk).first()  # two issues at once must not both pass
    if cluster.status == Cluster.Status.DELETED:
        raise ValidationError(_("This cluster is deleted: it reports nothing any more."))
    if ReporterToken.objects.for_org(cluster.organization).filter(cluster=cluster).active().count() >= (
        MAX_ACTIVE_TOKENS
    ):
        raise ValidationError(
            _("This cluster has %(count)d active reporter tokens, the most allowed: revoke one first.")
            % {"count": MAX_ACTIVE_TOKENS}
        )
    now = timezone.now()
    name = (name or "").strip()[:100] or f"head node {timezone.localtime(now):%Y-%m-%d %H:%M}"
    token, key = ReporterToken.issue(
        organization=cluster.organization,
        cluster=cluster,
        name=name,
        created_by=user,
        created_at=now,
        expires_at=now + timedelta(days=TOKEN_DAYS),
    )
    token.save()
    record_audit(
        actor=user,
        organization=cluster.organization,
        action="reporter_token.issue",
        target=cluster,
        changes={"token": [None, f"{name} ({token.prefix}…)"]},
    )
    logger.info("reporter token issued: id=%s prefix=%s cluster=%s by=%s", token.pk, token.prefix, cluster.pk, user)
    return token, key


def revoke_token(*, user, token: ReporterToken) -> ReporterToken:
    """Revoking twice keeps the first record."""
    operator_access(user, token.cluster)
    now = timezone.now()
    if ReporterToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=now, revoked_by=user):
        token.revoked_at, token.revoked_by = now, user
        record_audit(
            actor=user,
            organization=token.organization,
            action="reporter_token.revoke",
            target=token.cluster,
            changes={"token": [f"{token.name} ({token.prefix}…)", None]},
        )
        logger.info("reporter token revoked: id=%s prefix=%s by=%s", token.pk, token.prefix, user)
    else:
        token.refresh_from_db(fields=["revoked_at", "revoked_by"])
    return token


def check_reporters(*, now: datetime | None = None) -> dict[str, int]:
    """Beat's check: reporters silent for three of their intervals are marked so, and the jobs they last saw
    holding nodes (or that ran on a node since gone) become "state unknown". Repeating it changes nothing."""
    now = now or timezone.now()
    went_silent = 0
    reporting = Cluster.objects.filter(last_report_at__isnull=False, reporter_silent_since=None)
    for cluster in reporting.only("pk", "organization_id", "last_report_at", "report_interval_seconds"):
        if cluster.last_report_at + timedelta(seconds=cluster.report_interval_seconds * SILENT_AFTER_INTERVALS) > now:
            continue
        with transaction.atomic():
            if Cluster.objects.filter(pk=cluster.pk, reporter_silent_since=None).update(reporter_silent_since=now):
                went_silent += 1
                flag_jobs_unknown(cluster, now=now)
    flagged = 0
    watched = Job.objects.holding().filter(state_unknown_since=None).values_list("cluster_id", flat=True).distinct()
    for cluster in Cluster.objects.filter(pk__in=watched):
        flagged += flag_jobs_on_gone_nodes(cluster, now=now)
    return {"went_silent": went_silent, "jobs_on_gone_nodes": flagged}
