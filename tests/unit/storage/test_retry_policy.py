"""The retry policy: which failures are retried, how long between tries, and the bounds."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, ReadTimeoutError

from tierflow.config import InvalidSettingError, Settings
from tierflow.rsm import RemoteStorageError, TransientStorageError
from tierflow.storage.factory import retry_policy
from tierflow.storage.retry import RetryPolicy, is_transient, retry_call


def client_error(code: str, status: int) -> ClientError:
    return ClientError(
        {"Error": {"Code": code, "Message": code}, "ResponseMetadata": {"HTTPStatusCode": status}},
        "PutObject",
    )


@pytest.mark.parametrize(
    ("exc", "transient"),
    [
        pytest.param(client_error("SlowDown", 503), True, id="slow-down-503"),
        pytest.param(client_error("InternalError", 500), True, id="internal-error-500"),
        pytest.param(client_error("SomethingNew", 502), True, id="any-5xx"),
        pytest.param(client_error("TooManyRequests", 429), True, id="too-many-requests-429"),
        pytest.param(client_error("RequestTimeout", 400), True, id="request-timeout-400"),
        pytest.param(ReadTimeoutError(endpoint_url="http://s3"), True, id="read-timeout"),
        pytest.param(
            EndpointConnectionError(endpoint_url="http://s3"), True, id="endpoint-connection-error"
        ),
        pytest.param(ConnectionResetError(), True, id="connection-reset"),
        pytest.param(TransientStorageError("k", "reset"), True, id="transient-storage-error"),
        pytest.param(client_error("AccessDenied", 403), False, id="access-denied-403"),
        pytest.param(client_error("NoSuchBucket", 404), False, id="no-such-bucket-404"),
        pytest.param(RemoteStorageError("k", "bad"), False, id="remote-storage-error"),
        pytest.param(ValueError("a bug"), False, id="a-bug"),
    ],
)
def test_what_is_worth_retrying(exc: Exception, transient: bool) -> None:
    assert is_transient(exc) is transient


class Flaky:
    """Fails ``failures`` times with ``error``, then answers."""

    def __init__(self, failures: int, error: Exception) -> None:
        self.failures, self.error, self.calls = failures, error, 0

    def __call__(self) -> str:
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error
        return "done"


def policy(attempts: int, sleeps: list[float]) -> RetryPolicy:
    return RetryPolicy(
        attempts=attempts,
        base_delay_s=0.1,
        max_delay_s=0.5,
        sleep=sleeps.append,
        rng=random.Random(4),
    )


def test_transient_failures_are_retried_with_capped_full_jitter() -> None:
    sleeps: list[float] = []
    request = Flaky(5, client_error("SlowDown", 503))
    assert retry_call(policy(6, sleeps), "k", "upload", request) == "done"
    assert request.calls == 6 and len(sleeps) == 5
    ceilings = [0.1, 0.2, 0.4, 0.5, 0.5]  # doubling from the base, capped at the maximum
    assert all(0 <= s <= c for s, c in zip(sleeps, ceilings, strict=True))
    assert len(set(sleeps)) == 5  # jittered: concurrent writers do not retry in step


def test_a_spent_budget_names_key_action_attempts_and_cause() -> None:
    sleeps: list[float] = []
    request = Flaky(99, client_error("SlowDown", 503))
    with pytest.raises(RemoteStorageError) as raised:
        retry_call(policy(3, sleeps), "topic-x/0/seg.log", "upload", request)
    assert str(raised.value) == (
        "topic-x/0/seg.log: upload failed after 3 attempts: SlowDown: SlowDown"
    )
    assert request.calls == 3 and len(sleeps) == 2
    # Spent, the error is no longer transient: a retrying caller above does not multiply it.
    assert not is_transient(raised.value)
    inner_runs = 0

    def nested() -> str:
        nonlocal inner_runs
        inner_runs += 1
        failing = Flaky(99, TransientStorageError("k", "reset"))
        return retry_call(policy(3, []), "k", "upload", failing)

    with pytest.raises(RemoteStorageError, match="after 3 attempts"):
        retry_call(policy(3, []), "k", "upload", nested)
    assert inner_runs == 1


def test_a_permanent_failure_is_raised_at_once_unchanged() -> None:
    sleeps: list[float] = []
    denied = client_error("AccessDenied", 403)
    request = Flaky(1, denied)
    with pytest.raises(ClientError) as raised:
        retry_call(policy(5, sleeps), "k", "upload", request)
    assert raised.value is denied and request.calls == 1 and sleeps == []


def test_one_attempt_means_no_retry() -> None:
    request = Flaky(1, TransientStorageError("k", "reset"))
    with pytest.raises(RemoteStorageError, match="after 1 attempts"):
        retry_call(RetryPolicy(attempts=1), "k", "read", request)
    assert request.calls == 1


@pytest.mark.parametrize(
    ("attempts", "base", "most"), [(0, 0.1, 1.0), (3, -1.0, 1.0), (3, 2.0, 1.0)]
)
def test_a_nonsensical_policy_is_refused(attempts: int, base: float, most: float) -> None:
    with pytest.raises(ValueError):
        RetryPolicy(attempts=attempts, base_delay_s=base, max_delay_s=most)


def test_the_policy_comes_from_settings(tmp_path: Path) -> None:
    env = {
        **Settings.embedded(tmp_path).as_env(),
        "TIERFLOW_STORAGE_RETRY_ATTEMPTS": "8",
        "TIERFLOW_STORAGE_RETRY_BASE_MS": "50",
        "TIERFLOW_STORAGE_RETRY_MAX_MS": "3000",
        "TIERFLOW_STORAGE_TIMEOUT_S": "7",
    }
    settings = Settings.from_env(env)
    assert Settings.from_env(settings.as_env()) == settings
    assert retry_policy(settings) == RetryPolicy(attempts=8, base_delay_s=0.05, max_delay_s=3.0)
    assert settings.storage.timeout_s == 7


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("TIERFLOW_STORAGE_RETRY_ATTEMPTS", "0", "must be at least 1"),
        ("TIERFLOW_STORAGE_RETRY_MAX_MS", "10", "must be at least TIERFLOW_STORAGE_RETRY_BASE"),
        ("TIERFLOW_STORAGE_TIMEOUT_S", "soon", "expected a whole number"),
    ],
)
def test_invalid_retry_settings_are_named(
    tmp_path: Path, name: str, value: str, message: str
) -> None:
    env = {**Settings.embedded(tmp_path).as_env(), name: value}
    with pytest.raises(InvalidSettingError, match=message):
        Settings.from_env(env)
