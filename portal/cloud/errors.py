"""What can go wrong when the portal talks to a cloud, sorted by what the caller should do next."""

from __future__ import annotations

from botocore.exceptions import ClientError, HTTPClientError, ReadTimeoutError
from botocore.exceptions import ConnectionError as BotoConnectionError


class CloudError(Exception):
    """Base class: `message` is the cloud's own words, shown to the tenant as is."""

    def __init__(self, message: str, *, code: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.code = code


class TransientCloudError(CloudError):
    """Throttling, a 5xx, a dropped connection: the same call may succeed later, so retry with backoff."""


class PermanentCloudError(CloudError):
    """The request itself is wrong (validation, quota, access denied): retrying cannot help."""


class ProviderUnavailable(PermanentCloudError):
    """The provider's optional library is not installed in this deployment."""


# Error codes AWS uses for "slow down" and "try again": botocore already retries these inside one
# call; what is left after its attempts becomes a TransientCloudError for the Celery task to retry.
TRANSIENT_CODES = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestLimitExceeded",
        "RequestThrottled",
        "RequestThrottledException",
        "TooManyRequestsException",
        "SlowDown",
        "ServiceUnavailable",
        "ServiceUnavailableException",
        "InternalFailure",
        "InternalError",
        "InternalServerError",
        "InternalServerException",
        "RequestTimeout",
        "RequestTimeoutException",
        "PriorRequestNotComplete",
        "IDPCommunicationError",
    }
)
# What botocore's own retry mode takes for the network: no connection, a timeout, a connection dropped mid-answer.
_CONNECTION_ERRORS = (BotoConnectionError, HTTPClientError)


def error_code(error: ClientError) -> str:
    return error.response.get("Error", {}).get("Code", "")


def classify(error: Exception) -> CloudError:
    """Turn a botocore exception into a CloudError the caller can act on."""
    if isinstance(error, CloudError):
        return error
    if isinstance(error, ClientError):
        code = error_code(error)
        message = error.response.get("Error", {}).get("Message", "") or str(error)
        status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        if message.lstrip().startswith("<"):
            # An HTML error page (a proxy, or the emulator for a call it lacks) is no message to show.
            message = f"HTTP {status} from the service ({error.operation_name})"
        if code in TRANSIENT_CODES or status >= 500:
            return TransientCloudError(message, code=code)
        return PermanentCloudError(message, code=code)
    if isinstance(error, ReadTimeoutError):
        return TransientCloudError(f"AWS did not answer in time ({error}).", code=type(error).__name__)
    if isinstance(error, _CONNECTION_ERRORS):
        return TransientCloudError(str(error), code=type(error).__name__)
    return PermanentCloudError(str(error), code=type(error).__name__)
