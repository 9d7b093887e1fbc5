"""Every AWS call reaches /metrics too: its outcome per service and region, and its time (portal.cloud.calls)."""

import pytest
from prometheus_client import REGISTRY

from portal.cloud import AccountAccess, TransientCloudError, session_for
from tests.cloud.conftest import ROLE_ARN


def calls_counted(service: str, region: str, outcome: str) -> float:
    labels = {"service": service, "region": region, "outcome": outcome}
    return REGISTRY.get_sample_value("portal_aws_calls_total", labels) or 0.0


def sts_failed() -> dict[str, float]:
    """Failed STS calls counted so far, per region."""
    return {
        sample.labels["region"]: sample.value
        for family in REGISTRY.collect()
        if family.name == "portal_aws_calls"
        for sample in family.samples
        if sample.labels.get("service") == "sts" and sample.labels.get("outcome") == "failed"
    }


def timed(service: str, region: str) -> float:
    labels = {"service": service, "region": region}
    return REGISTRY.get_sample_value("portal_aws_call_duration_seconds_count", labels) or 0.0


def test_an_answered_call_counts_ok_per_service_and_region_with_its_time(session):
    before_ok, before_timed = calls_counted("sts", "us-east-1", "ok"), timed("sts", "us-east-1")
    session.client("sts").get_caller_identity()
    assert calls_counted("sts", "us-east-1", "ok") == before_ok + 1
    assert timed("sts", "us-east-1") == before_timed + 1


def test_a_refused_call_counts_failed_once_after_botocore_s_retries(refusing_endpoint, quick_profiles):
    quick_profiles("task", attempts=2)
    before = sts_failed()
    with pytest.raises(TransientCloudError):
        session_for(AccountAccess(role_arn=ROLE_ARN, external_id="", region="eu-west-1"))
    after = sts_failed()
    added = {region: count - before.get(region, 0) for region, count in after.items() if count != before.get(region)}
    assert list(added.values()) == [1], added  # two attempts, one call, in one region
