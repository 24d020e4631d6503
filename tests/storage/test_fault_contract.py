"""The fault contract of the cloud object stores, run against S3 (moto_server), GCS (the
emulator) and Azure (Azurite), each behind the fault proxy (tests/support/fault_proxy.py).

Each fault is injected on the wire, below the client library, so what is tested is the real
client's view of it: 5xx and throttling answers, a reset or a 503 in the middle of an upload
in parts, a stall past the read timeout, a download cut short, an answer lost after the
request took effect, and an upload cut short on the way. Transient faults are retried and end
in the exact object; permanent faults and spent budgets fail at once with the key named, and
leave no object behind. How each backend shapes its requests is in
tests/support/faulty_backends.py; what a cut upload ends in differs, and is tested per backend.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterator

import pytest

from tests.support.fault_proxy import FaultProxy, Rule, running_fault_proxy
from tests.support.faulty_backends import (
    ATTEMPTS,
    AZURE,
    BACKENDS,
    GCS,
    S3,
    TIMEOUT_S,
    FaultyBackend,
    Sleeps,
    payload,
)
from tierflow.rsm import ObjectInfo, RemoteStorageError, VerificationError
from tierflow.storage.object_store import ObjectStore
from tierflow.storage.retry import RetryPolicy
from tierflow.storage.verification import verify_objects


@pytest.fixture(params=BACKENDS, ids=str)
def backend(request: pytest.FixtureRequest) -> FaultyBackend:
    return request.param


@pytest.fixture
def proxy(request: pytest.FixtureRequest, backend: FaultyBackend) -> Iterator[FaultProxy]:
    with running_fault_proxy(backend.upstream(request)) as running:
        yield running


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def store(
    request: pytest.FixtureRequest, backend: FaultyBackend, proxy: FaultProxy, sleeps: Sleeps
) -> ObjectStore:
    policy = RetryPolicy(attempts=ATTEMPTS, base_delay_s=0.05, max_delay_s=0.4, sleep=sleeps)
    return backend.open(request, proxy.endpoint, policy)


def assert_stored(backend: FaultyBackend, store: ObjectStore, key: str, data: bytes) -> None:
    """The object reads back whole, its stat has the size and sha256 of ``data``, and no
    upload is left unfinished."""
    assert store.read_range(key) == data
    found = store.stat(key)
    assert found is not None and found.size == len(data)
    assert found.sha256 == hashlib.sha256(data).hexdigest()
    assert backend.unfinished(store) == []


def in_pieces(data: bytes, size: int = 10_000) -> Iterator[bytes]:
    return (data[i : i + size] for i in range(0, len(data), size))


def test_5xx_and_throttling_are_retried_and_the_object_is_exact(
    backend: FaultyBackend, store: ObjectStore, proxy: FaultProxy
) -> None:
    for match in backend.throttled:
        proxy.add(Rule("status", **match))
    data = payload(1000)
    store.put_bytes("a/one", data)
    assert proxy.injected["status"] == 2
    assert_stored(backend, store, "a/one", data)


def test_a_reset_or_a_503_in_mid_upload_resends_from_that_part(
    backend: FaultyBackend, store: ObjectStore, proxy: FaultProxy
) -> None:
    data = payload(3 * backend.part_size + 1234)  # four parts
    proxy.add(backend.part_rule("reset", 2))
    info = store.put_chunks("a/parts", in_pieces(data))
    assert proxy.injected["reset"] == 1
    assert info == ObjectInfo("a/parts", len(data), hashlib.sha256(data).hexdigest())
    assert_stored(backend, store, "a/parts", data)
    proxy.add(backend.part_rule("status", 3, status=503))
    store.put_bytes("a/again", data)
    assert proxy.injected["status"] == 1
    assert_stored(backend, store, "a/again", data)


def test_a_stall_past_the_read_timeout_is_a_retried_timeout(
    store: ObjectStore, proxy: FaultProxy, sleeps: Sleeps
) -> None:
    data = payload(4096)
    store.put_bytes("a/slow", data)
    proxy.add(Rule("stall", method="GET", seconds=TIMEOUT_S + 1.0, then_close=True))
    assert store.read_range("a/slow", 100, 200) == data[100:200]
    assert proxy.injected["stall"] == 1 and len(sleeps) == 1


def test_a_slow_answer_within_the_timeout_is_no_failure(
    backend: FaultyBackend, store: ObjectStore, proxy: FaultProxy, sleeps: Sleeps
) -> None:
    data = payload(4096)
    proxy.add(Rule("stall", method=backend.put, seconds=0.3))
    store.put_bytes("a/slowly", data)
    assert proxy.injected["stall"] == 1 and sleeps == []
    assert_stored(backend, store, "a/slowly", data)


def test_a_download_cut_short_resumes_at_the_byte_it_broke_off(
    backend: FaultyBackend, store: ObjectStore, proxy: FaultProxy
) -> None:
    data = payload(3 * 1024 * 1024 + 17)
    store.put_bytes("a/big", data)
    proxy.add(Rule("truncate_download", times=2, **backend.read))
    assert b"".join(store.iter_chunks("a/big", 256 * 1024)) == data
    assert proxy.injected["truncate_download"] == 2
    proxy.add(Rule("truncate_download", **backend.read))
    assert store.read_range("a/big", 10, 1_000_000) == data[10:1_000_000]


def test_a_finished_upload_whose_answer_was_lost_is_not_an_error(
    backend: FaultyBackend, store: ObjectStore, proxy: FaultProxy
) -> None:
    data = payload(backend.part_size + 99)  # two parts, then what makes them the object
    proxy.add(Rule("drop_response", **backend.finish))
    for match in backend.gone_after_finish:  # what the retry of the finish is answered
        proxy.add(Rule("status", **match))
    store.put_bytes("a/finished", data)
    assert proxy.injected == Counter(drop_response=1, status=len(backend.gone_after_finish))
    assert_stored(backend, store, "a/finished", data)


def test_deletes_and_listings_are_retried(
    backend: FaultyBackend, store: ObjectStore, proxy: FaultProxy
) -> None:
    keys = [f"list/{i:03d}" for i in range(7)]
    for key in keys:
        store.put_bytes(key, key.encode())
    proxy.add(Rule("status", **backend.list_page))
    assert list(store.list("list/")) == keys
    proxy.add(Rule("status", **backend.delete))
    store.delete(keys)
    assert proxy.injected["status"] == 2
    assert list(store.list("list/")) == []


def test_a_spent_budget_names_the_key_and_the_attempts_and_leaves_nothing(
    backend: FaultyBackend, store: ObjectStore, proxy: FaultProxy, sleeps: Sleeps
) -> None:
    proxy.add(backend.part_rule("status", 2, times=99))
    failed = f"upload of {backend.part_word} 2 failed after {ATTEMPTS} attempts"
    with pytest.raises(RemoteStorageError, match=rf"a/doomed: {failed}{backend.budget_reason}"):
        store.put_bytes("a/doomed", payload(2 * backend.part_size + 1))
    assert proxy.injected["status"] == ATTEMPTS
    assert store.stat("a/doomed") is None and backend.unfinished(store) == []
    # Full jitter: each sleep is somewhere in [0, base * 2**n], capped at the maximum.
    assert len(sleeps) == ATTEMPTS - 1
    assert all(0 <= s <= min(0.4, 0.05 * 2**n) for n, s in enumerate(sleeps))


def test_a_permanent_error_is_not_retried(
    backend: FaultyBackend, store: ObjectStore, proxy: FaultProxy, sleeps: Sleeps
) -> None:
    proxy.add(Rule("status", times=99, **backend.denied))
    before = proxy.requests
    with pytest.raises(RemoteStorageError, match=rf"a/denied: upload failed: {backend.denied_as}"):
        store.put_bytes("a/denied", b"x")
    assert proxy.requests - before == 1 and sleeps == []


# An upload cut on the way: the proxy forwards half the body and answers the server's answer.


@pytest.mark.parametrize("backend", [S3], ids=str)
def test_a_partial_object_is_caught_by_verification(store: ObjectStore, proxy: FaultProxy) -> None:
    """S3 takes the shorter body, and says 200: the upload looks fine."""
    proxy.add(Rule("truncate_upload", method="PUT"))
    info = store.put_bytes("a/partial", payload(50_000))
    assert proxy.injected["truncate_upload"] == 1
    with pytest.raises(VerificationError, match=r"a/partial: size 25000 bytes, uploaded 50000"):
        verify_objects(store, [info])


@pytest.mark.parametrize("backend", [AZURE], ids=str)
def test_a_partial_upload_is_refused_for_its_signed_length(
    store: ObjectStore, proxy: FaultProxy
) -> None:
    """Azure signs Content-Length with the shared key: a body cut on the way fails
    authentication, for good, and no blob is left."""
    proxy.add(Rule("truncate_upload", method="PUT"))
    with pytest.raises(RemoteStorageError, match=r"a/partial: upload failed: AuthorizationFailure"):
        store.put_bytes("a/partial", payload(50_000))
    assert proxy.injected["truncate_upload"] == 1
    assert store.stat("a/partial") is None


@pytest.mark.parametrize("backend", [GCS], ids=str)
def test_a_chunk_cut_on_the_way_is_completed_from_where_the_session_got(
    backend: FaultyBackend, store: ObjectStore, proxy: FaultProxy
) -> None:
    """The session answers each chunk with the bytes it kept: what it did not get is sent
    again, never lost and never doubled."""
    data = payload(2 * backend.part_size + 5)
    proxy.add(Rule("truncate_upload", **backend.part))
    store.put_bytes("a/partial", data)
    assert proxy.injected["truncate_upload"] == 1
    assert_stored(backend, store, "a/partial", data)
