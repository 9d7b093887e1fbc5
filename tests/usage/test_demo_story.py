"""The demo tells one story: each organization's usage history belongs to its one cluster, the cluster
`load_demo_telemetry` brings up in the emulator with as many workers as the story runs now; nothing in the history
is left running on a cluster that is not live; one organization runs beyond its allocation's end."""

import pytest
from django.core.management import call_command
from django.db.models import Sum
from django.utils import timezone

from tenants.models import Organization
from workloads.clusters.models import Cluster, ClusterInstanceGroup
from workloads.management.commands.load_demo_usage import PROFILES
from workloads.usage.models import NodeInterval, UsageDay


@pytest.fixture
def demo(db, catalog):
    call_command("load_demo")
    call_command("load_demo_usage")


@pytest.mark.django_db
def test_every_organization_has_one_live_cluster_holding_its_history(demo):
    orgs = list(Organization.objects.order_by("pk"))
    assert len(orgs) == 12
    for index, org in enumerate(orgs):
        clusters = list(Cluster.objects.for_org(org))
        assert len(clusters) == 1, org.name
        cluster = clusters[0]
        assert cluster.status in Cluster.LIVE  # to be brought up in the emulator, never "Deleted"
        assert cluster.name in {"p5-pretrain", "trn1-pretrain"}
        runs = NodeInterval.objects.for_org(org)
        assert runs.exists() and not runs.exclude(cluster=cluster).exists()
        workers = ClusterInstanceGroup.objects.get(cluster=cluster, role="worker")
        assert workers.instance_count == max(1, round(cluster.allocation.instance_count * PROFILES[index]))
    # The history's runs are all closed: from now on only the live nodes the poller sees count.
    assert not NodeInterval.objects.filter(ended_at=None).exists()


@pytest.mark.django_db
def test_one_organization_runs_beyond_its_allocation_and_one_is_idle(demo):
    today = timezone.localdate()
    minato = Organization.objects.get(slug="minato-finance")
    allocation = minato.allocations.get()
    assert allocation.ends_on < today
    after = UsageDay.objects.for_org(minato).filter(day__gt=allocation.ends_on)
    assert after.aggregate(r=Sum("running_microseconds"))["r"] > 0
    assert after.aggregate(a=Sum("allocated_microseconds"))["a"] == 0
    hokuto = Organization.objects.get(slug="hokuto")
    rows = UsageDay.objects.for_org(hokuto).aggregate(a=Sum("allocated_microseconds"), r=Sum("running_microseconds"))
    assert rows["r"] < rows["a"] * 0.25  # idle
