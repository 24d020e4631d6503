"""Retrying storage requests that failed for a reason that may pass: exponential backoff with
full jitter, bounded by configuration.

Object stores fail transiently all the time: 503 SlowDown, 500 InternalError, a read timeout, a
connection reset by a load balancer. A lifecycle task that gave up on the first of those would
fail a whole run for a blip; one that retried forever would hide an outage. So every request is
retried up to ``attempts`` times in all, sleeping a random time in [0, min(max_delay,
base_delay * 2**n)] before retry n+1 ("full jitter": concurrent writers that failed together do
not retry together). Permanent errors (access denied, no such bucket, a bad request) are raised
at once, and so is the last transient one, named with the number of attempts it took: the
exhausted error is no longer transient, so a retrying caller above never multiplies the bound.

``RetryingObjectStore`` applies the same policy to any ObjectStore from outside, as a wrapper.
The S3 store retries each of its requests itself (a part, a page, a resumed read), so it never
needs it. The wrapper is for a store whose failures come from outside its own requests: the
fault-injecting store the reliability tests put in front of a local bucket, and any backend
added later without retries of its own. Every operation is idempotent, so sending it again is
safe; a streamed upload is sent again only when its source was not consumed yet, because the
chunks read so far cannot be read twice.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from azure.core import exceptions as azure_errors
from botocore import exceptions as botocore_errors
from botocore.exceptions import ClientError
from google.api_core import exceptions as google_errors
from google.auth import exceptions as google_auth_errors
from google.resumable_media import InvalidResponse
from requests import exceptions as requests_errors
from urllib3.exceptions import ProtocolError

from tierflow.rsm import ObjectInfo, RemoteStorageError, TransientStorageError
from tierflow.storage.object_store import READ_CHUNK, ObjectStore

log = logging.getLogger(__name__)
T = TypeVar("T")

DEFAULT_ATTEMPTS = 5
DEFAULT_BASE_DELAY_S = 0.2
DEFAULT_MAX_DELAY_S = 20.0

# S3's error codes for "try again": throttling and server-side failures.
_TRANSIENT_CODES = {
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
_TRANSIENT_NETWORK = (
    botocore_errors.ConnectionClosedError,
    botocore_errors.ConnectTimeoutError,
    botocore_errors.EndpointConnectionError,
    botocore_errors.IncompleteReadError,
    botocore_errors.ReadTimeoutError,
    botocore_errors.ResponseStreamingError,
    ProtocolError,
    # Azure's SDK: the request never got an answer, or the answer broke off.
    azure_errors.ServiceRequestError,
    azure_errors.ServiceResponseError,
    azure_errors.IncompleteReadError,
    # Google's client library (requests underneath), and its token refresh.
    requests_errors.ConnectionError,
    requests_errors.Timeout,
    requests_errors.ChunkedEncodingError,
    google_auth_errors.TransportError,
    ConnectionError,  # the builtin: resets and refusals below botocore's wrappers
    TimeoutError,
)


def is_transient(exc: BaseException) -> bool:
    """Whether the same request may succeed if sent again."""
    if isinstance(exc, TransientStorageError):
        return True
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0
        return error.get("Code") in _TRANSIENT_CODES or int(status) >= 500 or status == 429
    if isinstance(exc, _TRANSIENT_NETWORK):
        return True
    status = _http_status(exc)
    return status is not None and (status >= 500 or status in (408, 429))  # throttled


def _http_status(exc: BaseException) -> int | None:
    """The HTTP status of an Azure or Google error; None for any other exception."""
    if isinstance(exc, azure_errors.AzureError):
        return getattr(exc, "status_code", None)
    if isinstance(exc, google_errors.GoogleAPICallError):
        return exc.code
    if isinstance(exc, InvalidResponse):  # a resumable upload's unexpected answer
        return exc.response.status_code
    return None


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = DEFAULT_ATTEMPTS  # in all, the first try included; 1 means no retry
    base_delay_s: float = DEFAULT_BASE_DELAY_S
    max_delay_s: float = DEFAULT_MAX_DELAY_S
    # Injectable for tests: they check the delays without sleeping through them.
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False, repr=False)
    rng: random.Random = field(default_factory=random.Random, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"retry attempts {self.attempts}: must be at least 1")
        if self.base_delay_s < 0 or self.max_delay_s < self.base_delay_s:
            raise ValueError(
                f"retry delays {self.base_delay_s}..{self.max_delay_s} s: need 0 <= base <= max"
            )

    def ceiling(self, retry: int) -> float:
        """The longest sleep before retry ``retry`` (1-based): doubling, capped."""
        return min(self.max_delay_s, self.base_delay_s * 2 ** (retry - 1))

    def delays(self) -> Iterator[float]:
        """The sleeps before each retry, ``attempts - 1`` of them."""
        for retry in range(1, self.attempts):
            yield self.rng.uniform(0, self.ceiling(retry))


NO_RETRY = RetryPolicy(attempts=1)


class Attempts:
    """The retry budget of one request, for loops that resend in their own way (a streaming
    read resumes where it broke off rather than starting over)."""

    def __init__(self, policy: RetryPolicy, key: str, action: str) -> None:
        self.policy, self.key, self.action = policy, key, action
        self._delays = policy.delays()
        self.attempt = 1

    def failed(self, exc: Exception) -> None:
        """Sleep before the next attempt; or raise: ``exc`` itself when it is permanent, a
        RemoteStorageError naming the attempts when the budget is spent."""
        if not is_transient(exc):
            raise exc
        delay = next(self._delays, None)
        if delay is None:
            raise RemoteStorageError(
                self.key, f"{self.action} failed after {self.attempt} attempts: {_describe(exc)}"
            ) from exc
        log.warning(
            "%s: %s failed (%s); retry %d of %d in %.2f s",
            self.key,
            self.action,
            _describe(exc),
            self.attempt,
            self.policy.attempts - 1,
            delay,
        )
        self.policy.sleep(delay)
        self.attempt += 1


def retry_call(policy: RetryPolicy, key: str, action: str, request: Callable[[], T]) -> T:
    """``request()``, sent again after each transient failure until ``policy`` runs out.

    ``key`` and ``action`` name what failed in the log and in the final error.
    """
    attempts = Attempts(policy, key, action)
    while True:
        try:
            return request()
        except Exception as exc:
            attempts.failed(exc)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        return f"{error.get('Code')}: {error.get('Message') or exc}"
    if isinstance(exc, RemoteStorageError):
        return exc.reason
    if isinstance(exc, azure_errors.HttpResponseError):
        code = getattr(exc.error_code, "value", exc.error_code) or exc.status_code
        return f"{code}: {exc.reason}"
    if isinstance(exc, google_errors.GoogleAPICallError):
        return f"{exc.code}: {exc.message}"
    if isinstance(exc, InvalidResponse):
        return f"HTTP {exc.response.status_code}: {exc.response.text[:200]}"
    return f"{type(exc).__name__}: {exc}"


class RetryingObjectStore:
    """An ObjectStore sending each request to ``inner`` again on transient errors."""

    def __init__(self, inner: ObjectStore, policy: RetryPolicy) -> None:
        self.inner = inner
        self.policy = policy

    def describe(self) -> str:
        return self.inner.describe()

    def put_file(self, key: str, source: Path) -> ObjectInfo:
        return retry_call(self.policy, key, "upload", lambda: self.inner.put_file(key, source))

    def put_bytes(self, key: str, data: bytes) -> ObjectInfo:
        return retry_call(self.policy, key, "upload", lambda: self.inner.put_bytes(key, data))

    def put_chunks(self, key: str, chunks: Iterable[bytes]) -> ObjectInfo:
        source = _Tracked(chunks)
        attempts = Attempts(self.policy, key, "upload")
        while True:
            try:
                return self.inner.put_chunks(key, source)
            except Exception as exc:
                if source.started:
                    raise
                attempts.failed(exc)

    def read_range(self, key: str, start: int = 0, end: int | None = None) -> bytes:
        return retry_call(self.policy, key, "read", lambda: self.inner.read_range(key, start, end))

    def iter_chunks(self, key: str, chunk_size: int = READ_CHUNK) -> Iterator[bytes]:
        """Resumes after a failure at the byte where the stream broke off."""
        attempts = Attempts(self.policy, key, "read")
        position = 0
        while True:
            try:
                skip = position
                for chunk in self.inner.iter_chunks(key, chunk_size):
                    if skip >= len(chunk):
                        skip -= len(chunk)
                        continue
                    chunk, skip = chunk[skip:], 0
                    position += len(chunk)
                    yield chunk
                return
            except Exception as exc:
                attempts.failed(exc)

    def stat(self, key: str) -> ObjectInfo | None:
        return retry_call(self.policy, key, "stat", lambda: self.inner.stat(key))

    def delete(self, keys: Iterable[str]) -> None:
        keys = list(keys)
        first = keys[0] if keys else "(no keys)"
        retry_call(self.policy, first, "delete", lambda: self.inner.delete(keys))

    def list(self, prefix: str = "") -> Iterator[str]:
        """Lists again after a failure, without yielding a key twice."""
        attempts = Attempts(self.policy, prefix or "(bucket root)", "list")
        seen: set[str] = set()
        while True:
            try:
                for key in self.inner.list(prefix):
                    if key not in seen:
                        seen.add(key)
                        yield key
                return
            except Exception as exc:
                attempts.failed(exc)


class _Tracked:
    """An iterable that remembers whether anyone took a chunk from it."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks = iter(chunks)
        self.started = False

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._chunks:
            self.started = True
            yield chunk
