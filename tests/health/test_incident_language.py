"""A case the portal opens is written once, in the organization's language, whoever's request produced it."""

import pytest

from tests.factories import ClusterFactory, ClusterNodeFactory
from workloads.health.models import HealthEvent
from workloads.models import CaseEvent, SupportCase

pytestmark = pytest.mark.django_db


@pytest.fixture
def cluster(org, catalog):
    cluster = ClusterFactory(organization=org, name="p5-train", cloud_name="fmp-1-p5-train")
    ClusterNodeFactory(cluster=cluster, instance_id="i-0001", hostname="ip-10-1-0-1")
    return cluster


def exporter_text(values: dict[int, int]) -> str:
    lines = ["# TYPE DCGM_FI_DEV_XID_ERRORS gauge"]
    lines += [f'DCGM_FI_DEV_XID_ERRORS{{gpu="{gpu}",Hostname="ip-10-1-0-1"}} {values.get(gpu, 0)}' for gpu in range(8)]
    return "\n".join(lines) + "\n"


def post(client, cluster, values, **headers):
    url = f"/api/v1/clusters/{cluster.pk}/health/ingest/"
    return client.post(url, {"metrics": exporter_text(values), "host": "ip-10-1-0-1"}, format="json", **headers)


def test_a_japanese_organizations_incident_case_is_in_japanese(member_api, cluster, org):
    org.language = "ja"
    org.save()
    # The reporter's request asks for English: the case still follows the organization.
    assert post(member_api, cluster, {3: 79}, HTTP_ACCEPT_LANGUAGE="en").status_code == 200
    case = SupportCase.objects.get()
    assert case.title == "GPU 3 で Xid 79: GPU がバスから脱落（i-0001）— クラスター p5-train"
    assert case.description.startswith("ポータルがクラスター p5-train で検出した事象:\n")
    assert "インスタンス i-0001 (ip-10-1-0-1), GPU 3, Xid 79" in case.description
    assert "ノードを交換してください: aws sagemaker batch-replace-cluster-nodes" in case.description
    assert "Replace the node" not in case.description and "The portal saw" not in case.description
    assert post(member_api, cluster, {}).status_code == 200  # cleared: said in Japanese too
    cleared = CaseEvent.objects.filter(case=case, kind="comment").get().body
    assert cleared.startswith("状態は解消しました") and "インスタンス i-0001, GPU 3" in cleared
    assert HealthEvent.objects.get().message == "Xid 79 on GPU 3: GPU has fallen off the bus"  # the reading as read


def test_an_english_organizations_case_is_in_english_whatever_the_request_says(member_api, cluster, org):
    assert org.language == "en"
    assert post(member_api, cluster, {3: 154}, HTTP_ACCEPT_LANGUAGE="ja").status_code == 200
    case = SupportCase.objects.get()
    assert case.title == "Xid 154 on GPU 3: GPU recovery action changed on i-0001 — cluster p5-train"
    assert case.description.startswith("The portal saw on cluster p5-train:\n")
    assert "Reboot the node: aws sagemaker batch-reboot-cluster-nodes --cluster-name fmp-1-p5-train" in case.description
