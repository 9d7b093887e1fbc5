import socket
import threading

import pytest
from moto import mock_aws

from portal.cloud import AccountAccess, calls, clear_session_cache, session_for

ROLE_ARN = "arn:aws:iam::111122223333:role/PortalAccess"


@pytest.fixture(autouse=True)
def no_counted_calls():
    """Each test starts with no AWS call outcomes counted in this process (portal.cloud.calls)."""
    calls.drain()
    yield
    calls.drain()


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


class BlackHole:
    """An endpoint that accepts every connection and never answers: AWS hanging, not refusing."""

    def __init__(self) -> None:
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(64)
        self.url = f"http://127.0.0.1:{self.server.getsockname()[1]}"
        self.held: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        self.server.settimeout(0.1)
        while not self._stop.is_set():
            try:
                self.held.append(self.server.accept()[0])
            except OSError:
                continue

    @property
    def connections(self) -> int:
        return len(self.held)

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        for sock in self.held:
            sock.close()
        self.server.close()


def _endpoint(monkeypatch, settings, url: str) -> None:
    """Every boto3 client of the portal sends to `url` (as AWS_ENDPOINT_URL does), with dummy credentials."""
    settings.AWS_ENDPOINT_URL = url
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    clear_session_cache()


@pytest.fixture
def black_hole(monkeypatch, settings):
    hole = BlackHole()
    _endpoint(monkeypatch, settings, hole.url)
    yield hole
    clear_session_cache()
    hole.close()


@pytest.fixture
def refusing_endpoint(monkeypatch, settings):
    """A port nothing listens on: every connection is refused at once."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"
    _endpoint(monkeypatch, settings, url)
    yield url
    clear_session_cache()


@pytest.fixture
def quick_profiles(monkeypatch):
    """Short timeouts, so a test waits seconds where production waits its budget (the budget's arithmetic is
    checked against the real profiles in test_budget.py)."""
    from portal.cloud import session

    def set_profile(name: str, *, connect: float = 1, read: float = 1, attempts: int = 2) -> None:
        monkeypatch.setitem(
            session.PROFILES,
            name,
            {
                "retries": {"mode": "standard", "total_max_attempts": attempts},
                "connect_timeout": connect,
                "read_timeout": read,
            },
        )
        clear_session_cache()

    set_profile("task")
    set_profile("poll")
    return set_profile
