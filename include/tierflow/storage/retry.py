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
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TypeVar

from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    IncompleteReadError,
    ReadTimeoutError,
    ResponseStreamingError,
)
from urllib3.exceptions import ProtocolError

from tierflow.rsm import RemoteStorageError, TransientStorageError

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
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    IncompleteReadError,
    ReadTimeoutError,
    ResponseStreamingError,
    ProtocolError,
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
    return isinstance(exc, _TRANSIENT_NETWORK)


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
    return f"{type(exc).__name__}: {exc}"
