"""A case the portal opens is stored in the organization's language, whoever's request produced it, and kept in
every language the portal speaks: each reader's pages show it in theirs (workloads/support/written.py)."""

import pytest
from django.utils import translation

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


def case_page(client, case, language):
    return client.get(f"/support/{case.pk}/", HTTP_ACCEPT_LANGUAGE=language).text


def test_each_reader_reads_the_portals_case_in_their_own_language(member_api, client, cluster, org):
    """A Japanese organization's Xid case: its admin reads Japanese, an English-speaking support engineer English —
    title, account and the note that it cleared; on the case list and the cluster page too."""
    from tenants.models import StaffRole
    from tests.factories import StaffRoleFactory

    org.language = "ja"
    org.save()
    assert post(member_api, cluster, {3: 79}).status_code == 200
    assert post(member_api, cluster, {}).status_code == 200  # cleared
    case = SupportCase.objects.get()
    client.force_login(StaffRoleFactory(role=StaffRole.Role.SUPPORT_ENGINEER).user)
    english = case_page(client, case, "en")
    assert "Xid 79 on GPU 3: GPU has fallen off the bus on i-0001 — cluster p5-train" in english
    assert "The portal saw on cluster p5-train:" in english
    assert "Condition cleared: the readings are normal again." in english
    assert "バス" not in english and "解消" not in english
    japanese = case_page(client, case, "ja")
    assert "GPU 3 で Xid 79: GPU がバスから脱落（i-0001）— クラスター p5-train" in japanese
    assert "状態は解消しました" in japanese and "fallen off the bus" not in japanese
    listed = client.get("/support/", HTTP_ACCEPT_LANGUAGE="en").text
    assert "Xid 79 on GPU 3: GPU has fallen off the bus on i-0001" in listed and "脱落" not in listed
    cluster_page = client.get(f"/clusters/{cluster.pk}/", HTTP_ACCEPT_LANGUAGE="en").text
    assert "Xid 79 on GPU 3: GPU has fallen off the bus on i-0001" in cluster_page


def test_a_japanese_reader_reads_an_english_organizations_health_events_in_japanese(member_api, client, cluster):
    """The reading's message is stored in English; the case, the cluster page and the health board say it in
    Japanese to a Japanese reader."""
    from tests.factories import StaffRoleFactory

    assert post(member_api, cluster, {3: 79}).status_code == 200
    case = SupportCase.objects.get()
    assert case.title.startswith("Xid 79 on GPU 3: GPU has fallen off the bus")  # stored in the org's language
    client.force_login(StaffRoleFactory().user)
    for url in (f"/clusters/{cluster.pk}/", f"/clusters/{cluster.pk}/health/", f"/support/{case.pk}/"):
        html = client.get(url, HTTP_ACCEPT_LANGUAGE="ja").text
        assert "GPU 3 で Xid 79: GPU がバスから脱落" in html, url
        assert "fallen off the bus" not in html, url


# -- Interconnect verdicts ----------------------------------------------------------------------------------------


def nccl_case(org, language: str):
    from tests.validation.test_nccl import MPIRUN_LOG
    from workloads.validation.services import record_validation

    org.language = language
    org.save()
    cluster = ClusterFactory(organization=org, name="p5-train")
    with translation.override("en" if language == "ja" else "ja"):  # the request's language must not matter
        validation, _new = record_validation(cluster=cluster, log=MPIRUN_LOG, nodes=2)
    return validation, SupportCase.objects.get(cluster=cluster)


def test_a_verdict_gives_sizes_in_gib_not_bytes(org, catalog):
    validation, case = nccl_case(org, "en")
    assert validation.reasons == [
        "peak bus bandwidth 437.89 GB/s (at 2 GiB) is 89.9% of the 487 GB/s baseline, below 90%"
    ]
    assert "437.89 GB/s at 2 GiB (average 52.9753 GB/s)" in case.description
    assert "2147483648" not in case.description and "2,147,483,648" not in case.description
    assert case.title == "Interconnect suspect on cluster p5-train: all_reduce peak 437.89 GB/s on 2 nodes"


def test_a_japanese_organizations_verdict_and_case_are_in_japanese(org, catalog):
    validation, case = nccl_case(org, "ja")
    assert validation.reasons == [
        "ピークのバス帯域幅 437.89 GB/s（2 GiB 時）はベースライン 487 GB/s の 89.9% で、90% を下回っています"
    ]
    assert case.title == "クラスター p5-train のインターコネクトに疑い: 2 ノードで all_reduce ピーク 437.89 GB/s"
    assert "2 GiB で 437.89 GB/s（平均 52.9753 GB/s）" in case.description
    assert "fi_info -p efa" in case.description and "Check EFA" not in case.description


@pytest.mark.parametrize(
    ("size", "said"),
    [(16 * 2**30, "16 GiB"), (2**31, "2 GiB"), (128 * 2**20, "128 MiB"), (8, "8 B"), (3 * 2**10, "3 KiB")],
)
def test_sizes_are_said_in_binary_units(size, said):
    from workloads.validation.nccl import format_size

    assert format_size(size) == said
