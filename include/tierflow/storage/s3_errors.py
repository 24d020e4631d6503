"""Which of botocore's (and urllib3's, below it) errors are worth sending a request again for.

Kept apart from ``s3.py`` and consulted by ``storage.retry`` only once such an error is met, so
that retrying, and every command that never talks to S3, imports no SDK.
"""

from __future__ import annotations

from botocore import exceptions as botocore_errors
from botocore.exceptions import ClientError
from urllib3.exceptions import ProtocolError

# S3's error codes for "try again": throttling and server-side failures.
TRANSIENT_CODES = {
    "InternalError",
    "ServiceUnavailable",
    "SlowDown",
    "RequestTimeout",
    "RequestTimeTooSkewed",
    "Throttling",
    "ThrottlingException",
    "RequestLimitExceeded",
    "BadDigest",  # the body arrived damaged: sending it again is the fix
    "IncompleteBody",
}
TRANSIENT_NETWORK = (
    botocore_errors.ConnectionClosedError,
    botocore_errors.ConnectTimeoutError,
    botocore_errors.EndpointConnectionError,
    botocore_errors.IncompleteReadError,
    botocore_errors.ReadTimeoutError,
    botocore_errors.ResponseStreamingError,
    ProtocolError,
)


def is_transient(exc: BaseException) -> bool | None:
    """Whether the same request may succeed if sent again; None for an error not S3's."""
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0
        return error.get("Code") in TRANSIENT_CODES or int(status) >= 500 or status == 429
    if isinstance(exc, TRANSIENT_NETWORK):
        return True
    return None


def describe(exc: BaseException) -> str | None:
    """S3's code and message, as a failure names them; None for an error not S3's."""
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        return f"{error.get('Code')}: {error.get('Message') or exc}"
    return None
