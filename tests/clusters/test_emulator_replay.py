"""`make run`'s emulator keeps its state across restarts: it records what it serves, and the next start replays the
state changes. Here against a real moto server: provision, record, reset the emulator (as a restart empties it),
replay, and the cluster is back in its organization's account, in service."""

import json

import pytest
import requests
from django.core.management import call_command

from portal.management.commands.emulator_replay import changes_state
from tests.clusters.conftest import cloud_org
from workloads.clusters.provisioning import provider_for, provision
from workloads.clusters.services import GroupRequest, create_cluster

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize(
    ("entry", "kept"),
    [
        ({"method": "POST", "headers": {"X-Amz-Target": "SageMaker.CreateCluster"}, "body": "{}"}, True),
        ({"method": "POST", "headers": {"X-Amz-Target": "SageMaker.DescribeCluster"}, "body": "{}"}, False),
        ({"method": "POST", "headers": {"X-Amz-Target": "SageMaker.ListClusterNodes"}, "body": "{}"}, False),
        ({"method": "POST", "headers": {}, "body": "Action=RunInstances&Version=2016-11-15"}, True),
        ({"method": "POST", "headers": {}, "body": "Action=DescribeInstances&Version=2016-11-15"}, False),
        ({"method": "POST", "headers": {}, "body": "Action=AssumeRole&RoleArn=arn"}, False),
        (
            {"method": "PUT", "headers": {}, "url": "http://e/bucket/on_create.sh", "body": "x", "body_encoded": True},
            True,
        ),
        ({"method": "GET", "headers": {}, "url": "http://e/bucket/on_create.sh"}, False),
    ],
)
def test_only_requests_that_changed_state_are_replayed(entry, kept):
    assert changes_state(entry) is kept


def test_a_restarted_emulator_gets_its_clusters_back(emulator_server, settings, tmp_path, catalog):
    settings.AWS_EMULATOR = True  # requests name their account, as under make run
    recording = tmp_path / "moto-recording.jsonl"
    from moto.moto_api import recorder

    recorder._location = str(recording)
    requests.post(f"{emulator_server}/moto-api/recorder/start-recording", timeout=10)
    try:
        setup = cloud_org()
        cluster = create_cluster(
            organization=setup.org,
            allocation=setup.allocation,
            name="p5-replayed",
            kind="hyperpod_slurm",
            groups=[GroupRequest("p5.48xlarge", 2)],
            actor=setup.actor,
        )
        assert provision(cluster.pk) == "created"
        cluster.refresh_from_db()
        provider = provider_for(cluster)
        assert provider.describe(cluster.cloud_name).status == "in_service"
    finally:
        requests.post(f"{emulator_server}/moto-api/recorder/stop-recording", timeout=10)

    requests.post(f"{emulator_server}/moto-api/reset", timeout=10)  # a restart: the emulator is empty again
    assert provider.describe(cluster.cloud_name).status == "not_found"
    lines = len(recording.read_text().splitlines())

    call_command("emulator_replay", str(recording), endpoint=emulator_server)

    described = provider_for(cluster).describe(cluster.cloud_name)
    assert (described.status, described.cloud_id) == ("in_service", cluster.cloud_id)  # same account, same ARN
    assert {node.status for node in provider.list_nodes(cluster.cloud_name)} == {"Running"}
    kept = [json.loads(line) for line in recording.read_text().splitlines()]
    assert 0 < len(kept) < lines and all(changes_state(entry) for entry in kept)  # reads dropped for good
