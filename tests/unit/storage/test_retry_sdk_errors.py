"""Each backend classifies its own SDK's errors (``s3_errors``, ``azure_errors``,
``gcs_errors``), so ``storage.retry`` imports no SDK: a command on a local bucket loads none.
The S3 cases are in test_retry_policy.py; here Azure's and Google's, and the SDK-free import."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
import requests
from azure.core import exceptions as azure_errors
from botocore.exceptions import ClientError
from google.api_core import exceptions as google_errors
from google.auth import exceptions as google_auth_errors
from google.resumable_media import InvalidResponse

from tests.support.loaded_modules import among
from tierflow.storage.retry import SDK_ERRORS, _describe, is_transient

# The SDKs (and what they stand on) that only a cloud bucket's commands may load. ``google``
# and ``google.cloud`` themselves are namespace packages a .pth file makes at start-up.
SDKS = (
    "botocore",
    "boto3",
    "azure",
    "google.cloud.",
    "google.api_core",
    "google.auth",
    "google.resumable_media",
    "requests",
    "urllib3",
)


def sdks_in(modules: list[str]) -> list[str]:
    """The SDK modules among ``modules``: a package named in SDKS, or one of its modules."""
    return among(modules, SDKS)


def modules_after(code: str) -> list[str]:
    """The modules a fresh interpreter has loaded once it ran ``code``."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))\n"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def test_retrying_imports_no_sdk() -> None:
    loaded = modules_after(
        "from tierflow.storage.retry import is_transient\n"
        "assert is_transient(ConnectionResetError()) and not is_transient(ValueError())\n"
    )
    assert "tierflow.storage.retry" in loaded
    assert sdks_in(loaded) == []


def test_a_local_bucket_loads_no_sdk(tmp_path: Path) -> None:
    loaded = modules_after(
        "from tierflow.storage.factory import open_object_store\n"
        f"store = open_object_store({str(tmp_path / 'bucket')!r})\n"
        "store.put_bytes('k', b'v')\n"
        "assert store.read_range('k') == b'v'\n"
    )
    assert "tierflow.storage.local" in loaded
    assert sdks_in(loaded) == []


def test_an_sdk_error_met_loads_its_backend_classifier() -> None:
    """The checks above can fail: with an S3 error in hand, retry consults s3_errors."""
    loaded = modules_after(
        "from botocore.exceptions import ClientError\n"
        "from tierflow.storage.retry import is_transient\n"
        "assert is_transient(ClientError({'Error': {'Code': 'SlowDown'}}, 'PutObject'))\n"
    )
    assert "tierflow.storage.s3_errors" in loaded and "botocore" in sdks_in(loaded)


@pytest.mark.parametrize("sdk", sorted(SDK_ERRORS))
def test_each_sdk_has_a_backend_classifier(sdk: str) -> None:
    classifier = importlib.import_module(SDK_ERRORS[sdk])
    assert classifier.__name__.startswith("tierflow.storage.")
    assert callable(classifier.is_transient) and callable(classifier.describe)
    assert classifier.is_transient(ValueError("not an SDK's")) is None
    assert classifier.describe(ValueError("not an SDK's")) is None


def azure_error(cls: type[azure_errors.HttpResponseError], status: int | None, code: str | None):
    """An HTTP error as Azure's storage SDK raises it (it sets the error code)."""
    error = cls(message="failed")
    error.status_code, error.error_code, error.reason = status, code, "Reason"
    return error


def invalid_response(status: int) -> InvalidResponse:
    response = requests.Response()
    response.status_code, response._content = status, b"the body"
    return InvalidResponse(response, "unexpected")


HttpError = azure_errors.HttpResponseError


class OwnClientError(ClientError):
    """A subclass defined outside botocore: classified by the SDK of its base class."""


@pytest.mark.parametrize(
    ("exc", "transient", "described"),
    [
        pytest.param(
            azure_error(HttpError, 503, "ServerBusy"),
            True,
            "ServerBusy: Reason",
            id="azure-server-busy-503",
        ),
        pytest.param(azure_error(HttpError, 500, None), True, "500: Reason", id="azure-500"),
        pytest.param(azure_error(HttpError, 408, None), True, "408: Reason", id="azure-408"),
        pytest.param(
            azure_error(HttpError, 429, "Throttled"),
            True,
            "Throttled: Reason",
            id="azure-throttled-429",
        ),
        pytest.param(
            azure_error(azure_errors.ResourceNotFoundError, 404, "BlobNotFound"),
            False,
            "BlobNotFound: Reason",
            id="azure-blob-not-found-404",
        ),
        pytest.param(
            azure_error(HttpError, 403, "AuthFailed"),
            False,
            "AuthFailed: Reason",
            id="azure-auth-failed-403",
        ),
        pytest.param(
            azure_errors.ServiceRequestError("no answer"), True, None, id="azure-service-request"
        ),
        pytest.param(
            azure_errors.ServiceResponseError("broke off"), True, None, id="azure-service-response"
        ),
        pytest.param(
            google_errors.ServiceUnavailable("busy"),
            True,
            "503: busy",
            id="google-service-unavailable",
        ),
        pytest.param(
            google_errors.TooManyRequests("slow down"),
            True,
            "429: slow down",
            id="google-too-many-requests",
        ),
        pytest.param(google_errors.NotFound("gone"), False, "404: gone", id="google-not-found"),
        pytest.param(google_errors.Forbidden("no"), False, "403: no", id="google-forbidden"),
        pytest.param(
            google_auth_errors.TransportError("token refresh got no answer"),
            True,
            None,
            id="google-auth-transport",
        ),
        pytest.param(
            google_auth_errors.RefreshError("revoked"), False, None, id="google-auth-refresh"
        ),
        pytest.param(
            invalid_response(503), True, "HTTP 503: the body", id="resumable-media-invalid-503"
        ),
        pytest.param(
            invalid_response(400), False, "HTTP 400: the body", id="resumable-media-invalid-400"
        ),
        pytest.param(requests.ConnectionError("reset"), True, None, id="requests-connection"),
        pytest.param(requests.ReadTimeout("stalled"), True, None, id="requests-read-timeout"),
        pytest.param(
            requests.exceptions.ChunkedEncodingError("cut"),
            True,
            None,
            id="requests-chunked-encoding",
        ),
        pytest.param(requests.HTTPError("a 4xx"), False, None, id="requests-http-error"),
        pytest.param(
            OwnClientError({"Error": {"Code": "SlowDown", "Message": "m"}}, "Put"),
            True,
            "SlowDown: m",
            id="botocore-subclass-slow-down",
        ),
    ],
)
def test_sdk_errors_are_classified_as_before(
    exc: BaseException, transient: bool, described: str | None
) -> None:
    assert is_transient(exc) is transient
    assert _describe(exc) == (described or f"{type(exc).__name__}: {exc}")
