import pytest
from moto import mock_aws

from portal.cloud import AccountAccess, clear_session_cache, session_for

ROLE_ARN = "arn:aws:iam::111122223333:role/PortalAccess"


@pytest.fixture
def aws(monkeypatch, settings):
    """moto in-process: dummy credentials, no endpoint override (mock_aws intercepts AWS hostnames)."""
    for name in ("AWS_ENDPOINT_URL", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    settings.AWS_ENDPOINT_URL = ""
    clear_session_cache()
    with mock_aws():
        yield
    clear_session_cache()


@pytest.fixture
def session(aws):
    return session_for(AccountAccess(role_arn=ROLE_ARN, external_id="ext-alpha", region="us-east-1"))


@pytest.fixture
def no_sleep(monkeypatch):
    """Record botocore's retry backoff instead of waiting it out (the waits themselves are botocore's)."""
    sleeps: list[float] = []
    monkeypatch.setattr("botocore.endpoint.time.sleep", sleeps.append)
    return sleeps
