"""Which of the Azure SDK's errors are worth sending a request again for.

Kept apart from ``azure_blob.py`` and consulted by ``storage.retry`` only once such an error is
met, so that retrying, and every command that never talks to Azure, imports no SDK.
"""

from __future__ import annotations

from azure.core import exceptions as azure_errors

from tierflow.storage.http_status import transient_sdk_error

# The request never got an answer, or the answer broke off.
TRANSIENT_NETWORK = (
    azure_errors.ServiceRequestError,
    azure_errors.ServiceResponseError,
    azure_errors.IncompleteReadError,
)


def is_transient(exc: BaseException) -> bool | None:
    """Whether the same request may succeed if sent again (a 5xx, 408 or 429 answer, a broken
    connection); None for an error not Azure's."""
    return transient_sdk_error(exc, TRANSIENT_NETWORK, _http_status)


def _http_status(exc: BaseException) -> int | None:
    """The answer's status; 0 (never transient) for an Azure error that got none, None for an
    error not Azure's."""
    if isinstance(exc, azure_errors.AzureError):
        return getattr(exc, "status_code", None) or 0
    return None


def describe(exc: BaseException) -> str | None:
    """Azure's error code (or HTTP status) and reason; None for an error not Azure's."""
    if isinstance(exc, azure_errors.HttpResponseError):
        code = getattr(exc.error_code, "value", exc.error_code) or exc.status_code
        return f"{code}: {exc.reason}"
    return None
