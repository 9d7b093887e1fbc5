import copy
import socket
from dataclasses import dataclass

import pytest
import requests
from django.utils import translation
from moto.moto_server.threaded_moto_server import ThreadedMotoServer
from moto.sagemaker.models import sagemaker_backends

from portal.cloud import AccountAccess, clear_session_cache, session_for
from portal.cloud.lifecycle import SAMPLE_ON_CREATE, seed_lifecycle_scripts
from tests.cloud.conftest import aws  # noqa: F401  (re-exported fixture: moto in process)
from tests.factories import (
    ActiveAllocationFactory,
    MembershipFactory,
    OrganizationFactory,
    OrgCloudSettingsFactory,
    instance_type,
)


@pytest.fixture(autouse=True)
def english():
    """Messages are compared in English. A request in Japanese earlier in the same thread leaves
    Japanese active (LocaleMiddleware activates a language and never resets it)."""
    with translation.override("en"):
        yield


@pytest.fixture
def allocation(org):
    """Eight P5 in us-east-1, active today, for the `org` fixture (Alpha Lab)."""
    OrgCloudSettingsFactory(organization=org)
    return ActiveAllocationFactory(organization=org, instance_count=8, pool__instance_type=instance_type("p5.48xlarge"))


@pytest.fixture
def other_allocation(other_org):
    OrgCloudSettingsFactory(organization=other_org)
    return ActiveAllocationFactory(organization=other_org, instance_count=8)


@pytest.fixture
def actor(org):
    return MembershipFactory(organization=org).user


class Emulator:
    """Reach into moto's SageMaker backend of one tenant account to play the cloud's part."""

    def __init__(self, account_id: str, region: str = "us-east-1"):
        self.backend = sagemaker_backends[account_id][region]

    def clusters(self) -> list[str]:
        return list(self.backend.clusters)

    def cluster(self, name: str):
        return self.backend.clusters[name]

    def set_cluster_status(self, name: str, status: str, message: str = "") -> None:
        self.cluster(name).status = status
        self.cluster(name).failure_message = message

    def set_node_status(self, name: str, node_id: str, status: str) -> None:
        self.cluster(name).nodes[node_id].status = status

    def replace_node(self, name: str, node_id: str, new_id: str) -> None:
        nodes = self.cluster(name).nodes
        replacement = copy.copy(nodes.pop(node_id))
        replacement.instance_id = new_id
        nodes[new_id] = replacement


def seed_scripts(org) -> None:
    """Put sample lifecycle scripts at the org's S3 location in the emulator (a real org uploads its own)."""
    session = session_for(AccountAccess.for_organization(org, "us-east-1"))
    seed_lifecycle_scripts(session, org.cloud_settings.lifecycle_s3_uri, {"on_create.sh": SAMPLE_ON_CREATE})


@pytest.fixture
def emulator(request, org):
    request.getfixturevalue("aws")  # moto in process, set up before the emulator is reached into
    if hasattr(org, "cloud_settings"):
        seed_scripts(org)
    return Emulator(org.aws_account_id)


@pytest.fixture
def emulator_server(monkeypatch, settings):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    url = f"http://127.0.0.1:{port}"
    requests.post(f"{url}/moto-api/reset", timeout=10)
    settings.AWS_ENDPOINT_URL = url
    for name, value in {"AWS_ACCESS_KEY_ID": "emulator", "AWS_SECRET_ACCESS_KEY": "emulator"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    clear_session_cache()
    yield url
    clear_session_cache()
    requests.post(f"{url}/moto-api/reset", timeout=10)
    server.stop()


@dataclass
class CloudOrg:
    org: object
    allocation: object
    actor: object
    emulator: Emulator


def cloud_org() -> CloudOrg:
    """An org ready to provision in the emulator (moto server or in-process): cloud settings, an active
    allocation of 8 × p5.48xlarge, a member to act, and lifecycle scripts in its S3 location."""
    org = OrganizationFactory(slug="alpha")
    OrgCloudSettingsFactory(organization=org)
    allocation = ActiveAllocationFactory(
        organization=org, instance_count=8, pool__instance_type=instance_type("p5.48xlarge")
    )
    actor = MembershipFactory(organization=org).user
    seed_scripts(org)
    return CloudOrg(org, allocation, actor, Emulator(org.aws_account_id))
