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

from portal.cloud.errors import PermanentCloudError, classify

# botocore's "standard" retry mode backs off exponentially (with jitter) on throttling and
# transient errors inside one call; the Celery task retries what is left over.
RETRY_CONFIG = {"mode": "standard", "max_attempts": 5}  # retries after the first attempt
# Two profiles of call. Provisioning and deletion are patient: botocore retries, then the task does, for
# as long as the cluster page shows. Polls are quick: a poll asks again a minute later anyway, and a hanging
# endpoint (one that accepts the connection and never answers) must not hold a worker slot for minutes —
# at 60 s × 6 attempts one batch held a slot for 8 minutes while beat queued duplicates behind it.
PROFILES = {
    "task": {"retries": dict(RETRY_CONFIG), "connect_timeout": 10, "read_timeout": 60},
    "poll": {"retries": {"mode": "standard", "max_attempts": 1}, "connect_timeout": 3, "read_timeout": 10},
}
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
    base = boto3.Session(region_name=access.region)
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
    account_id = access.role_arn.split(":")[4]
    cloud_session = CloudSession(session, access.region, account_id, profile)
    expires = credentials["Expiration"]
    if expires.tzinfo is None:
        expires = expires.replace(tzinfo=UTC)
    with _cache_lock:
        _cache[(access, profile)] = (cloud_session, expires)
    return cloud_session
