"""Sessions in a tenant's AWS account: assume the org's cross-account role through STS.

Every client honours AWS_ENDPOINT_URL (settings), so the same code runs against the local emulator.
Assumed credentials are cached per process until shortly before they expire: a poll cycle over a
thousand clusters of twelve orgs makes twelve STS calls, not a thousand.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError
from django.conf import settings

from portal.cloud import calls
from portal.cloud.errors import PermanentCloudError, classify

# Two profiles of call, each bounded by botocore's own timeouts and retry budget so that one call ends — answered or
# failed — inside the soft time limit of every task that makes it (worst_case_seconds; tests/cloud/test_budget.py
# checks the tasks' limits against it). botocore's "standard" retry mode backs off exponentially with jitter on
# throttling and transient errors within one call; the task retries what is left over.
# Provisioning and deletion are patient: a control-plane call answers in a second or two, 30 s to read is ample.
# Polls are quick: a poll asks again a minute later anyway, and an endpoint that accepts the connection and never
# answers must not hold a poll slot.
PROFILES = {
    "task": {"retries": {"mode": "standard", "total_max_attempts": 3}, "connect_timeout": 5, "read_timeout": 30},
    "poll": {"retries": {"mode": "standard", "total_max_attempts": 2}, "connect_timeout": 2, "read_timeout": 5},
}
# botocore's standard mode: before retry i (1-based) it waits at most min(2 ** (i - 1), 20) s, raised by up to 5 s
# more when the answer carries x-amz-retry-after (botocore.retries.standard.ExponentialBackoff).
_MAX_BACKOFF, _RETRY_AFTER_EXTRA = 20, 5


def attempt_seconds(profile: str) -> float:
    """The longest one attempt lasts: connecting, then waiting for the answer (botocore's read timeout is per socket
    read; an endpoint that trickles an answer byte by byte could take longer, which the soft time limit ends)."""
    settings_ = PROFILES[profile]
    return settings_["connect_timeout"] + settings_["read_timeout"]


def worst_case_seconds(profile: str) -> float:
    """The longest one call of this profile lasts before it gives up: every attempt to its timeouts, and the longest
    backoff between them."""
    attempts = PROFILES[profile]["retries"]["total_max_attempts"]
    backoff = sum(min(2 ** (retry - 1), _MAX_BACKOFF) + _RETRY_AFTER_EXTRA for retry in range(1, attempts))
    return attempts * attempt_seconds(profile) + backoff


_REFRESH_MARGIN = timedelta(minutes=5)


@dataclass(frozen=True)
class AccountAccess:
    """How to reach one organization's AWS account."""

    role_arn: str
    external_id: str
    region: str
    session_name: str = "fm-program-portal"

    @classmethod
    def for_organization(cls, organization, region: str) -> AccountAccess:
        return cls(
            role_arn=organization.role_arn,
            external_id=organization.external_id,
            region=region,
            session_name=f"fm-portal-{organization.slug}"[:64],
        )


def endpoint_url() -> str | None:
    return settings.AWS_ENDPOINT_URL or None


def client_config(profile: str = "task", **overrides) -> Config:
    settings_ = PROFILES[profile]
    return Config(
        retries=dict(settings_["retries"]),
        connect_timeout=settings_["connect_timeout"],
        read_timeout=settings_["read_timeout"],
        **overrides,
    )


class CloudSession:
    """A boto3 session in one tenant account plus a client factory that honours the endpoint."""

    def __init__(self, session: boto3.Session, region: str, account_id: str = "", profile: str = "task") -> None:
        self.boto3_session = session
        self.region = region
        self.account_id = account_id
        self.profile = profile
        self._clients: dict[str, object] = {}
        self._lock = threading.Lock()
        # On the session, so every client made from it (a provider library's too) is watched (portal.cloud.calls).
        calls.watch(session.events, account=account_id, region=region, attempt_seconds=attempt_seconds(profile))

    def client(self, service: str):
        # boto3 clients are thread-safe; sessions are not, hence the lock around creation.
        with self._lock:
            if service not in self._clients:
                client = self.boto3_session.client(
                    service, region_name=self.region, endpoint_url=endpoint_url(), config=client_config(self.profile)
                )
                if settings.AWS_EMULATOR and self.account_id:
                    client.meta.events.register("before-sign", self._name_the_account)
                self._clients[service] = client
            return self._clients[service]

    def _name_the_account(self, request, **kwargs) -> None:
        """The local emulator records this header with each request, so a replay after a restart (when the assumed
        role's keys are long gone) puts every cluster back in the right account (portal's emulator_replay)."""
        request.headers["x-moto-account-id"] = self.account_id


_cache: dict[tuple[AccountAccess, str], tuple[CloudSession, datetime]] = {}
_cache_lock = threading.Lock()


def clear_session_cache() -> None:
    with _cache_lock:
        _cache.clear()


def session_for(access: AccountAccess, *, profile: str = "task") -> CloudSession:
    """A session with the org's assumed role, cached until five minutes before the credentials expire.
    `profile` picks the calls' timeouts and retries (PROFILES): "task" for provisioning, "poll" for polls."""
    if not access.role_arn:
        raise PermanentCloudError(
            "This organization has no cross-account role linked: an admin sets its role ARN first.",
            code="NoRoleLinked",
        )
    now = datetime.now(UTC)
    with _cache_lock:
        cached = _cache.get((access, profile))
        if cached and cached[1] - _REFRESH_MARGIN > now:
            return cached[0]
    arn = access.role_arn.split(":")
    account_id = arn[4] if len(arn) > 4 else ""
    base = boto3.Session(region_name=access.region)
    calls.watch(base.events, account=account_id, region=access.region, attempt_seconds=attempt_seconds(profile))
    sts = base.client("sts", region_name=access.region, endpoint_url=endpoint_url(), config=client_config(profile))
    try:
        params = {"RoleArn": access.role_arn, "RoleSessionName": access.session_name, "DurationSeconds": 3600}
        if access.external_id:
            params["ExternalId"] = access.external_id
        credentials = sts.assume_role(**params)["Credentials"]
    except (ClientError, BotoCoreError) as error:
        raise classify(error) from error
    session = boto3.Session(
        aws_access_key_id=credentials["AccessKeyId"],
        aws_secret_access_key=credentials["SecretAccessKey"],
        aws_session_token=credentials["SessionToken"],
        region_name=access.region,
    )
    cloud_session = CloudSession(session, access.region, account_id, profile)
    expires = credentials["Expiration"]
    if expires.tzinfo is None:
        expires = expires.replace(tzinfo=UTC)
    with _cache_lock:
        _cache[(access, profile)] = (cloud_session, expires)
    return cloud_session
