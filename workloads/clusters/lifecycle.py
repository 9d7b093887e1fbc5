"""The cluster lifecycle as a state machine: every status change goes through `transition`, a compare-and-set, so
a duplicate task, a late poll and a user's click can race without ever skipping a state or recording a change
twice. Each change is one entry on the cluster's timeline (ClusterEvent)."""

from __future__ import annotations

from django.conf import settings
from django.db import transaction
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from workloads.clusters.models import Cluster, ClusterEvent


@transaction.atomic
def transition(*, cluster_id: int, to: str, message: str = "", actor=None, **fields) -> bool:
    """Move a cluster to `to` if the lifecycle allows it from its current status; record the change once.

    Returns False (and writes nothing) when another actor got there first or the move is not allowed.
    """
    current = Cluster.objects.filter(pk=cluster_id).values_list("status", "organization_id").first()
    if current is None:
        return False
    status, organization_id = current
    if to not in Cluster.TRANSITIONS[status]:
        return False
    now = timezone.now()
    changed = Cluster.objects.filter(pk=cluster_id, status=status).update(
        status=to, status_message=message, status_changed_at=now, **fields
    )
    if changed:
        ClusterEvent.objects.create(
            organization_id=organization_id,
            cluster_id=cluster_id,
            from_status=status,
            to_status=to,
            message=message,
            actor=actor,
        )
    return bool(changed)


def record_text(message: str, **params) -> str:
    """Timeline text in the record's language (LANGUAGE_CODE), whichever language the person who acted reads:
    the worker writes in it too, and pages translate it back for each reader where the catalog knows it."""
    with translation.override(settings.LANGUAGE_CODE):
        return _(message) % params if params else _(message)


def note(cluster: Cluster, message: str, actor=None) -> None:
    ClusterEvent.objects.create(organization=cluster.organization, cluster=cluster, message=message, actor=actor)
