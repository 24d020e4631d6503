"""Which errors of Google's client libraries (and of requests, beneath them) are worth sending
a request again for.

Kept apart from ``gcs.py`` and consulted by ``storage.retry`` only once such an error is met,
so that retrying, and every command that never talks to GCS, imports no SDK.
"""

from __future__ import annotations

from google.api_core import exceptions as google_errors
from google.auth import exceptions as google_auth_errors
from google.resumable_media import InvalidResponse
from requests import exceptions as requests_errors

from tierflow.storage.http_status import transient_sdk_error

# The client library's transport (requests), and its token refresh.
TRANSIENT_NETWORK = (
    requests_errors.ConnectionError,
    requests_errors.Timeout,
    requests_errors.ChunkedEncodingError,
    google_auth_errors.TransportError,
)


def is_transient(exc: BaseException) -> bool | None:
    """Whether the same request may succeed if sent again (a 5xx, 408 or 429 answer, a broken
    connection); None for an error not Google's."""
    return transient_sdk_error(exc, TRANSIENT_NETWORK, _http_status)


def _http_status(exc: BaseException) -> int | None:
    if isinstance(exc, google_errors.GoogleAPICallError):
        return exc.code
    if isinstance(exc, InvalidResponse):  # a resumable upload's unexpected answer
        return exc.response.status_code
    return None


def describe(exc: BaseException) -> str | None:
    """The API's status and message, or a resumable upload's answer; None for an error not
    Google's."""
    if isinstance(exc, google_errors.GoogleAPICallError):
        return f"{exc.code}: {exc.message}"
    if isinstance(exc, InvalidResponse):
        return f"HTTP {exc.response.status_code}: {exc.response.text[:200]}"
    return None
