"""The Xid rules come from a data file read from NVIDIA's Xid catalog: each code's severity and action, the H100/H200
driver codes (GSP, unrecovered ECC, NVLink units, the driver's recovery action) critical with the catalog's action,
and a reading of one of them opening a critical event and a case that says what to do."""

import csv

import pytest
from django.urls import reverse

from tests.factories import ClusterFactory, ClusterNodeFactory
from workloads.health.dcgm import (
    OTHER_XID,
    XID_CATALOG_PATH,
    XID_RULES,
    Action,
    Severity,
    xid_rule,
)
from workloads.health.models import HealthEvent
from workloads.models import SupportCase

ROWS = list(csv.DictReader(XID_CATALOG_PATH.open(encoding="utf-8")))

# What the catalog says each H100/H200-era code needs (its immediate-action resolution bucket; 154: the driver's
# message says, a reboot when it is not read).
H100_CODES = {
    119: Action.RESET_GPU,
    120: Action.RESET_GPU,
    140: Action.RESET_GPU,
    143: Action.RESET_GPU,
    154: Action.REBOOT_NODE,
}
# Rows as NVIDIA's catalog (Table 1 of analyzing-xid-catalog.html) gives them: mnemonic, immediate-action bucket,
# "Applies to H100", Xid 154 linkage.
NVIDIA_ROWS = {
    48: ("ROBUST_CHANNEL_GPU_ECC_DBE", "WORKFLOW_XID_48", "YES", "CUDA 12.7; GPU driver R565"),
    63: ("INFOROM_DRAM_RETIREMENT_EVENT", "IGNORE", "YES", "CUDA 12.7; GPU driver R565"),
    64: ("INFOROM_DRAM_RETIREMENT_FAILURE", "RESET_GPU", "YES", "CUDA 12.7; GPU driver R565"),
    74: ("NVLINK_ERROR", "WORKFLOW_NVLINK_ERR", "YES", "CUDA 12.7; GPU driver R565"),
    79: ("ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS", "RESTART_BM", "YES", "CUDA 12.7; GPU driver R565"),
    92: ("EXCESSIVE_SBE_INTERRUPTS", "IGNORE", "YES", ""),
    94: ("ROBUST_CHANNEL_CONTAINED_ERROR", "RESTART_APP", "YES", "CUDA 12.7; GPU driver R565"),
    95: ("ROBUST_CHANNEL_UNCONTAINED_ERROR", "RESET_GPU", "YES", "CUDA 12.7; GPU driver R565"),
    119: ("GSP_RPC_TIMEOUT", "RESET_GPU", "YES", ""),
    120: ("GSP_ERROR", "RESET_GPU", "YES", "CUDA 12.7; GPU driver R565"),
    140: ("UNRECOVERABLE_ECC_ERROR_ESCAPE", "RESET_GPU", "YES", ""),
    143: ("GPU_INIT_ERROR", "RESET_GPU", "YES", "CUDA 12.9; GPU driver R575"),
    144: ("NVLINK_SAW_ERROR", "WORKFLOW_NVLINK5_ERR", "NO", "CUDA 12.7; GPU driver R565"),
    145: ("NVLINK_RLW_ERROR", "WORKFLOW_NVLINK5_ERR", "NO", "CUDA 12.7; GPU driver R565"),
    146: ("NVLINK_TLW_ERROR", "WORKFLOW_NVLINK5_ERR", "NO", "CUDA 12.7; GPU driver R565"),
    147: ("NVLINK_TREX_ERROR", "WORKFLOW_NVLINK5_ERR", "NO", "CUDA 12.7; GPU driver R565"),
    148: ("NVLINK_NVLPW_CTRL_ERROR", "WORKFLOW_NVLINK5_ERR", "NO", "CUDA 12.7; GPU driver R565"),
    149: ("NVLINK_NETIR_ERROR", "WORKFLOW_NVLINK5_ERR", "NO", "CUDA 12.7; GPU driver R565"),
    150: ("NVLINK_MSE_ERROR", "WORKFLOW_NVLINK5_ERR", "NO", "CUDA 12.7; GPU driver R565"),
    154: ("GPU_RECOVERY_ACTION_CHANGED", "XID_154", "YES", ""),
}


def test_every_row_of_the_data_file_is_a_rule_with_its_source():
    assert {int(row["code"]) for row in ROWS} == set(XID_RULES)
    for row in ROWS:
        rule = XID_RULES[int(row["code"])]
        assert (rule.severity, rule.action, rule.resolution) == (
            Severity(row["severity"]),
            Action(row["action"]),
            row["nvidia_resolution"],
        )
        assert rule.name and rule.why and rule.mnemonic and rule.source.startswith("NVIDIA Xid catalog")
        assert "docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html" in rule.source


@pytest.mark.parametrize("code", sorted(NVIDIA_ROWS))
def test_each_row_says_what_nvidias_catalog_says(code):
    rule = XID_RULES[code]
    assert (rule.mnemonic, rule.resolution, rule.applies_to_h100, rule.xid154_linkage) == NVIDIA_ROWS[code]


def test_nvidias_ignore_is_never_critical():
    # 63 (a row remap recorded) and 92 (corrected errors): NVIDIA's immediate action is none.
    for code in (63, 92):
        assert XID_RULES[code].severity is Severity.WARNING


@pytest.mark.parametrize(
    ("err_msg", "severity", "action"),
    [
        ("SAW_MVB Nonfatal XC0 i0 Link 0 (0x00000001 0x00000008 0x00000000 0x00000000 0x00000000 0x00000000)",
         Severity.WARNING, Action.MONITOR),
        ("NETIR_LINK_EVT Fatal XC0 i0 Link 00 (0x026001c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)",
         Severity.CRITICAL, Action.RESET_GPU),
        ("", Severity.WARNING, Action.RESET_GPU),
    ],
)  # fmt: skip
def test_nvlink5_unit_errors_are_judged_by_the_drivers_fatal_or_nonfatal(err_msg, severity, action):
    # Kernel messages as gpud's tests quote them (leptonai/gpud components/accelerator/nvidia/xid).
    for code in range(144, 151):
        rule = xid_rule(code, err_msg)
        assert (rule.severity, rule.action) == (severity, action)
        assert rule.applies_to_h100 == "NO"


@pytest.mark.parametrize(("code", "action"), sorted(H100_CODES.items()))
def test_h100_driver_codes_are_critical_with_the_catalogs_action(code, action):
    rule = xid_rule(code)
    assert (rule.code, rule.severity, rule.action) == (code, Severity.CRITICAL, action)


def test_a_code_nvidia_resolves_by_reset_or_reboot_is_never_a_warning():
    resolved = [rule for rule in XID_RULES.values() if rule.resolution in ("RESET_GPU", "RESTART_VM", "RESTART_BM")]
    assert resolved, "no rule says NVIDIA resolves it by reset or reboot: the catalog was not read"
    for rule in resolved:
        assert rule.severity is Severity.CRITICAL, rule.code
        assert rule.action in (Action.RESET_GPU, Action.REBOOT_NODE, Action.REPLACE_NODE), rule.code


def test_an_application_xid_stays_a_warning_to_restart_the_job():
    assert xid_rule(13) is OTHER_XID and xid_rule(31) is OTHER_XID
    assert (OTHER_XID.severity, OTHER_XID.action) == (Severity.WARNING, Action.RESTART_JOB)


@pytest.mark.parametrize(
    ("err_msg", "action"),
    [
        ("GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)", Action.RESET_GPU),
        ("GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)", Action.REBOOT_NODE),
        ("GPU recovery action changed from 0x1 (GPU Reset Required) to 0x2 (Node Reboot Required)", Action.REBOOT_NODE),
        ("GPU recovery action changed from 0x0 (None) to 0x4 (Drain and Reset)", Action.RESET_GPU),
        ("", Action.REBOOT_NODE),  # no message: a reboot covers a reset too
    ],
)
def test_xid_154_takes_the_drivers_recovery_action_from_its_message(err_msg, action):
    assert xid_rule(154, err_msg).action is action
    assert xid_rule(154, err_msg).severity is Severity.CRITICAL


def test_xid_154_back_to_none_asks_for_nothing():
    rule = xid_rule(154, "GPU recovery action changed from 0x1 (GPU Reset Required) to 0x0 (None)")
    assert (rule.severity, rule.action) == (Severity.WARNING, Action.MONITOR)


@pytest.fixture
def cluster(org, catalog):
    cluster = ClusterFactory(organization=org, name="p5-train", cloud_name="fmp-1-p5-train")
    ClusterNodeFactory(cluster=cluster, instance_id="i-0001", hostname="ip-10-1-0-1.ec2.internal")
    return cluster


def exporter_text(gpu: int, code: int, err_msg: str = "") -> str:
    lines = ["# TYPE DCGM_FI_DEV_XID_ERRORS gauge"]
    for index in range(8):
        value = code if index == gpu else 0
        msg = f',err_code="{value}",err_msg="{err_msg}"' if index == gpu and err_msg else ""
        lines.append(f'DCGM_FI_DEV_XID_ERRORS{{gpu="{index}",Hostname="ip-10-1-0-1"{msg}}} {value}')
    return "\n".join(lines) + "\n"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("code", "err_msg", "action", "says"),
    [
        (119, "", "reset GPU", "nvidia-smi -r -i 2"),
        (154, "", "reboot node", "batch-reboot-cluster-nodes --cluster-name fmp-1-p5-train --node-ids i-0001"),
        (
            154,
            "GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)",
            "reset GPU",
            "nvidia-smi -r -i 2",
        ),
    ],
)
def test_a_reading_of_an_h100_xid_opens_a_critical_event_and_case_with_the_action(
    member_api, cluster, code, err_msg, action, says
):
    response = member_api.post(
        f"/api/v1/clusters/{cluster.pk}/health/ingest/",
        {"metrics": exporter_text(2, code, err_msg), "host": "ip-10-1-0-1"},
        format="json",
    )
    assert response.status_code == 200, response.json()
    event = HealthEvent.objects.get()
    assert (event.kind, event.gpu, event.code, event.severity, event.action) == ("gpu_xid", 2, code, "critical", action)
    case = SupportCase.objects.get()
    assert event.case == case and f"Xid {code}" in case.description and says in case.description


@pytest.mark.django_db
def test_the_rules_page_shows_the_catalog_and_cites_its_source(support_client):
    page = support_client.get(reverse("health:rules")).content.decode()
    assert "R535" not in page and "GPU driver R565" in page and "R575" in page
    assert "docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html" in page
    assert "GSP RPC timeout" in page and "GPU_RECOVERY_ACTION_CHANGED" in page and "RESET_GPU" in page
    assert "WORKFLOW_NVLINK5_ERR" in page and "Every row was checked against the catalog" in page


@pytest.mark.django_db
def test_the_rules_page_says_meanings_and_actions_in_the_readers_language(support_client):
    support_client.cookies["django_language"] = "ja"
    page = support_client.get(reverse("health:rules"), HTTP_ACCEPT_LANGUAGE="ja").content.decode()
    assert "GSP RPC タイムアウト" in page and "GPU をリセット" in page and "ノードを交換" in page
    assert "インターコネクトがベースラインを下回っています" in page  # a case severity rule's why
    assert "計測期間の 1% 以上、熱で性能が制限された" in page  # a metric rule's condition
    assert "GPU_RECOVERY_ACTION_CHANGED" in page and "RESET_GPU" in page  # NVIDIA's own names stay as they are
    assert "The GPU System Processor" not in page


@pytest.mark.django_db
def test_the_rules_page_gives_baseline_sizes_in_gib(support_client, catalog):
    page = support_client.get(reverse("health:rules")).content.decode()
    assert "16 GiB" in page and "16.0 GB" not in page


def test_every_text_kept_as_data_is_extracted_and_has_its_japanese():
    # `make makemessages` only sees gettext calls: data_msgids lists the rest, so their Japanese is never dropped.
    import polib
    from django.conf import settings

    from workloads.health.data_msgids import MSGIDS
    from workloads.health.dcgm import METRIC_RULES
    from workloads.health.incidents import INCIDENT_SEVERITY
    from workloads.health.temperature import TEMPERATURE_RULES
    from workloads.reporting.views import guide_paragraphs

    texts = {text for rule in (*XID_RULES.values(), OTHER_XID) for text in (rule.name, rule.why)}
    texts |= {text for rule in (*METRIC_RULES, *TEMPERATURE_RULES) for text in (rule.condition, rule.why)}
    texts |= {rule.why for rule in INCIDENT_SEVERITY} | {action.value for action in Action}
    texts |= {p.rstrip("\n") for p in guide_paragraphs() if not p.startswith(("sudo ", "[", "*/5"))}
    assert texts - set(MSGIDS) == set()
    catalog = polib.pofile(str(settings.BASE_DIR / "workloads" / "locale" / "ja" / "LC_MESSAGES" / "django.po"))
    translated = {entry.msgid for entry in catalog.translated_entries()}
    assert texts - translated == set()
