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
Which SDK error is transient each backend says itself (``s3_errors``, ``azure_errors``,
``gcs_errors``); this module imports none of the SDKs.

``RetryingObjectStore`` applies the same policy to any ObjectStore from outside, as a wrapper.
The S3 store retries each of its requests itself (a part, a page, a resumed read), so it never
needs it. The wrapper is for a store whose failures come from outside its own requests: the
fault-injecting store the reliability tests put in front of a local bucket, and any backend
added later without retries of its own. Every operation is idempotent, so sending it again is
safe; a streamed upload is sent again only when its source was not consumed yet, because the
chunks read so far cannot be read twice.
"""

from __future__ import annotations

import importlib
import logging
import random
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, TypeVar, cast

from tierflow.rsm import ObjectInfo, RemoteStorageError, TransientStorageError
from tierflow.storage.object_store import READ_CHUNK, ObjectStore

log = logging.getLogger(__name__)
T = TypeVar("T")

DEFAULT_ATTEMPTS = 5
DEFAULT_BASE_DELAY_S = 0.2
DEFAULT_MAX_DELAY_S = 20.0


class ErrorClassifier(Protocol):
    """What a backend knows of its SDK's errors (a module of ``is_transient`` and
    ``describe``); each answers None for an error it does not know."""

    def is_transient(self, exc: BaseException) -> bool | None: ...

    def describe(self, exc: BaseException) -> str | None: ...


# The backend module that classifies an SDK's errors, by the top-level package the SDK's
# exception classes come from. It is imported when such an error is first met (the SDK is loaded
# by then), so retrying imports no SDK, and a command that never leaves the disk loads none.
# They import nothing of this module (no cycle). A new backend adds its SDK here.
SDK_ERRORS: dict[str, str] = {
    "botocore": "tierflow.storage.s3_errors",
    "urllib3": "tierflow.storage.s3_errors",  # a body stream's read, below botocore
    "azure": "tierflow.storage.azure_errors",
    "google": "tierflow.storage.gcs_errors",
    "requests": "tierflow.storage.gcs_errors",  # the transport of Google's client libraries
}


def classifiers(exc: BaseException) -> Iterator[ErrorClassifier]:
    """The classifiers of the SDKs that ``exc``'s class, or a class it derives from, is from."""
    seen: set[str] = set()
    for cls in type(exc).__mro__:
        name = SDK_ERRORS.get(cls.__module__.partition(".")[0])
        if name is not None and name not in seen:
            seen.add(name)
            yield cast(ErrorClassifier, importlib.import_module(name))


def is_transient(exc: BaseException) -> bool:
    """Whether the same request may succeed if sent again."""
    # Ours, and the builtins whatever raised them: resets and refusals below the SDKs'
    # wrappers, timeouts.
    if isinstance(exc, (TransientStorageError, ConnectionError, TimeoutError)):
        return True
    for classifier in classifiers(exc):
        transient = classifier.is_transient(exc)
        if transient is not None:
            return transient
    return False


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
    if isinstance(exc, RemoteStorageError):
        return exc.reason
    for classifier in classifiers(exc):
        described = classifier.describe(exc)
        if described is not None:
            return described
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
