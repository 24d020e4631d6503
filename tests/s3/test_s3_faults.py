"""The S3 store against a misbehaving S3: moto_server behind the fault proxy.

Each fault is injected on the wire, below boto3, so what is tested is the real client's view of
it: 5xx answers, a stall past the read timeout, a connection reset in the middle of a multipart
upload, an answer lost after the request took effect, a download cut short, and a partial
object that the server accepted. Transient faults are retried and end in the exact object;
the partial object is caught by verification; permanent faults and spent budgets fail at once
with the key named, and leave no incomplete upload behind.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import pytest

from tests.support.moto_server import ACCESS_KEY_ID, REGION, SECRET_ACCESS_KEY, MotoServer
from tests.support.s3_fault_proxy import FaultProxy, Rule, running_fault_proxy
from tierflow.config import MIN_S3_PART_SIZE
from tierflow.rsm import ObjectInfo, RemoteStorageError, VerificationError
from tierflow.storage.retry import RetryPolicy
from tierflow.storage.s3 import S3ObjectStore
from tierflow.storage.s3_handover import S3ClientSpec
from tierflow.storage.verification import verify_objects

TIMEOUT_S = 1  # the client's read timeout: a stall longer than this is a timeout
ATTEMPTS = 4


class Sleeps(list[float]):
    """Records the backoff instead of sleeping it (the delays are checked, not waited for)."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture
def proxy(moto_server: MotoServer) -> Iterator[FaultProxy]:
    with running_fault_proxy(moto_server.endpoint) as running:
        yield running


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def store(proxy: FaultProxy, s3_bucket: str, sleeps: Sleeps) -> S3ObjectStore:
    spec = S3ClientSpec(
        endpoint_url=proxy.endpoint,
        region_name=REGION,
        access_key_id=ACCESS_KEY_ID,
        secret_access_key=SECRET_ACCESS_KEY,
    )
    policy = RetryPolicy(attempts=ATTEMPTS, base_delay_s=0.05, max_delay_s=0.4, sleep=sleeps)
    return S3ObjectStore(
        s3_bucket,
        prefix="faults",
        part_size=MIN_S3_PART_SIZE,
        client=spec.client(timeout_s=TIMEOUT_S),
        retry=policy,
    )


def payload(size: int, seed: int = 7) -> bytes:
    block = hashlib.sha256(str(seed).encode()).digest()
    return (block * (size // len(block) + 1))[:size]


def assert_stored(store: S3ObjectStore, key: str, data: bytes) -> None:
    assert store.read_range(key) == data
    found = store.stat(key)
    assert found is not None and found.size == len(data)
    assert found.sha256 == hashlib.sha256(data).hexdigest()
    assert store.incomplete_uploads() == []


def test_a_503_is_retried_and_the_object_is_exact(store: S3ObjectStore, proxy: FaultProxy):
    proxy.add(Rule("status", method="PUT", status=503, code="SlowDown", times=2))
    data = payload(1000)
    store.put_bytes("a/one", data)
    assert proxy.injected["status"] == 2
    assert_stored(store, "a/one", data)


def test_a_reset_in_the_middle_of_a_multipart_upload_resends_only_that_part(
    store: S3ObjectStore, proxy: FaultProxy
):
    data = payload(2 * MIN_S3_PART_SIZE + 1234)  # three parts
    proxy.add(Rule("reset", method="PUT", query="partNumber", query_value="2"))
    info = store.put_chunks("a/multi", (data[i : i + 65536] for i in range(0, len(data), 65536)))
    assert proxy.injected["reset"] == 1
    assert info == ObjectInfo("a/multi", len(data), hashlib.sha256(data).hexdigest())
    assert_stored(store, "a/multi", data)


def test_a_stall_past_the_read_timeout_is_a_retried_timeout(
    store: S3ObjectStore, proxy: FaultProxy, sleeps: Sleeps
):
    data = payload(4096)
    store.put_bytes("a/slow", data)
    proxy.add(Rule("stall", method="GET", seconds=TIMEOUT_S + 1.0, then_close=True))
    assert store.read_range("a/slow", 100, 200) == data[100:200]
    assert proxy.injected["stall"] == 1 and len(sleeps) == 1


def test_a_slow_answer_within_the_timeout_is_no_failure(
    store: S3ObjectStore, proxy: FaultProxy, sleeps: Sleeps
):
    data = payload(4096)
    proxy.add(Rule("stall", method="PUT", seconds=0.3))
    store.put_bytes("a/slowly", data)
    assert proxy.injected["stall"] == 1 and sleeps == []
    assert_stored(store, "a/slowly", data)


def test_a_download_cut_short_resumes_at_the_byte_it_broke_off(
    store: S3ObjectStore, proxy: FaultProxy
):
    data = payload(3 * 1024 * 1024 + 17)
    store.put_bytes("a/big", data)
    proxy.add(Rule("truncate_download", method="GET", times=2))
    assert b"".join(store.iter_chunks("a/big", 256 * 1024)) == data
    assert proxy.injected["truncate_download"] == 2
    proxy.add(Rule("truncate_download", method="GET"))
    assert store.read_range("a/big", 10, 1_000_000) == data[10:1_000_000]


def test_a_completed_upload_whose_answer_was_lost_is_not_an_error(
    store: S3ObjectStore, proxy: FaultProxy
):
    data = payload(MIN_S3_PART_SIZE + 99)  # two parts; the completion is a POST with uploadId
    proxy.add(Rule("drop_response", method="POST", query="uploadId"))
    # The retry finds the upload gone, as S3 answers once it has assembled the object.
    proxy.add(Rule("status", method="POST", query="uploadId", status=404, code="NoSuchUpload"))
    store.put_bytes("a/completed", data)
    assert proxy.injected["drop_response"] == 1 and proxy.injected["status"] == 1
    assert_stored(store, "a/completed", data)


def test_a_partial_object_is_caught_by_verification(store: S3ObjectStore, proxy: FaultProxy):
    data = payload(50_000)
    proxy.add(Rule("truncate_upload", method="PUT"))
    info = store.put_bytes("a/partial", data)  # the server said 200: the upload looks fine
    assert proxy.injected["truncate_upload"] == 1
    with pytest.raises(VerificationError, match=r"a/partial: size 25000 bytes, uploaded 50000"):
        verify_objects(store, [info])


def test_deletes_and_listings_are_retried(store: S3ObjectStore, proxy: FaultProxy):
    keys = [f"list/{i:03d}" for i in range(7)]
    for key in keys:
        store.put_bytes(key, key.encode())
    store.list_page_size = 3  # three pages: the second fails once
    proxy.add(
        Rule("status", method="GET", query="continuation-token", status=500, code="InternalError")
    )
    assert list(store.list("list/")) == keys
    proxy.add(Rule("status", method="POST", query="delete", status=503))
    store.delete(keys)
    assert proxy.injected["status"] == 2
    assert list(store.list("list/")) == []


def test_a_spent_budget_names_the_key_and_the_attempts_and_aborts_the_upload(
    store: S3ObjectStore, proxy: FaultProxy, sleeps: Sleeps
):
    data = payload(MIN_S3_PART_SIZE + 1)
    proxy.add(Rule("status", method="PUT", query="partNumber", query_value="2", times=99))
    with pytest.raises(
        RemoteStorageError,
        match=rf"a/doomed: upload of part 2 failed after {ATTEMPTS} attempts: SlowDown",
    ):
        store.put_bytes("a/doomed", data)
    assert proxy.injected["status"] == ATTEMPTS
    assert store.stat("a/doomed") is None and store.incomplete_uploads() == []
    # Full jitter: each sleep is somewhere in [0, base * 2**n], capped at the maximum.
    assert len(sleeps) == ATTEMPTS - 1
    assert all(0 <= s <= min(0.4, 0.05 * 2**n) for n, s in enumerate(sleeps))


def test_a_permanent_error_is_not_retried(store: S3ObjectStore, proxy: FaultProxy, sleeps: Sleeps):
    proxy.add(Rule("status", method="PUT", status=403, code="AccessDenied", times=99))
    before = proxy.requests
    with pytest.raises(RemoteStorageError, match=r"a/denied: upload failed: AccessDenied"):
        store.put_bytes("a/denied", b"x")
    assert proxy.requests - before == 1 and sleeps == []
