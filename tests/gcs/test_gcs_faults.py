"""The GCS store against a misbehaving GCS: fake-gcs-server behind the fault proxy.

The faults are injected on the wire, below the client library: 5xx and throttling answers, a
reset in the middle of a resumable upload, a stall past the read timeout, a download cut
short, a last chunk whose answer was lost, and an upload cut short on the way. Transient
faults are retried and end in the exact object; permanent faults and spent budgets fail at
once with the key named, and leave no object behind.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.azure.test_azure_faults import assert_stored
from tests.s3.test_s3_faults import Sleeps, payload
from tests.support.gcs_emulator import EMULATOR_ENV, GcsEmulator
from tests.support.s3_fault_proxy import FaultProxy, Rule, running_fault_proxy
from tierflow.rsm import RemoteStorageError
from tierflow.storage.gcs import GcsObjectStore
from tierflow.storage.gcs_handover import GcsClientSpec
from tierflow.storage.retry import RetryPolicy

TIMEOUT_S = 1
ATTEMPTS = 4
PART = 256 * 1024
CHUNK = {"method": "PUT", "query": "upload_id"}  # a resumable session's chunk


@pytest.fixture
def proxy(gcs_emulator: GcsEmulator) -> Iterator[FaultProxy]:
    with running_fault_proxy(gcs_emulator.endpoint) as running:
        yield running


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def store(
    proxy: FaultProxy, sleeps: Sleeps, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> GcsObjectStore:
    monkeypatch.setenv(EMULATOR_ENV, proxy.endpoint)
    client = GcsClientSpec("tierflow-test").client()
    bucket = f"faults-{tmp_path.name[-20:].lower().replace('_', '-')}"
    client.create_bucket(bucket)
    policy = RetryPolicy(attempts=ATTEMPTS, base_delay_s=0.05, max_delay_s=0.4, sleep=sleeps)
    return GcsObjectStore(
        bucket, prefix="faults", part_size=PART, client=client, retry=policy, timeout_s=TIMEOUT_S
    )


def test_a_503_and_throttling_are_retried_and_the_object_is_exact(
    store: GcsObjectStore, proxy: FaultProxy
) -> None:
    proxy.add(Rule("status", method="POST", status=503))
    proxy.add(Rule("status", method="POST", status=429))
    data = payload(1000)
    store.put_bytes("a/one", data)
    assert proxy.injected["status"] == 2
    assert_stored(store, "a/one", data)


def test_a_reset_or_a_503_mid_session_resends_from_where_the_session_got(
    store: GcsObjectStore, proxy: FaultProxy
) -> None:
    data = payload(3 * PART + 1234)  # four chunks
    proxy.add(Rule("reset", skip=1, **CHUNK))
    store.put_chunks("a/chunks", (data[i : i + 10_000] for i in range(0, len(data), 10_000)))
    assert proxy.injected["reset"] == 1
    assert_stored(store, "a/chunks", data)
    proxy.add(Rule("status", skip=2, status=503, **CHUNK))
    store.put_bytes("a/again", data)
    assert proxy.injected["status"] == 1
    assert_stored(store, "a/again", data)


def test_a_stall_past_the_timeout_and_a_cut_download_are_retried(
    store: GcsObjectStore, proxy: FaultProxy, sleeps: Sleeps
) -> None:
    data = payload(3 * 1024 * 1024 + 17)
    store.put_bytes("a/big", data)
    proxy.add(Rule("stall", method="GET", seconds=TIMEOUT_S + 1.0, then_close=True))
    assert store.read_range("a/big", 100, 200) == data[100:200]
    assert proxy.injected["stall"] == 1 and len(sleeps) == 1
    proxy.add(Rule("truncate_download", method="GET", query="alt", times=2))
    assert b"".join(store.iter_chunks("a/big", 256 * 1024)) == data
    assert proxy.injected["truncate_download"] == 2


def test_a_last_chunk_whose_answer_was_lost_is_found_finished(
    store: GcsObjectStore, proxy: FaultProxy
) -> None:
    data = payload(PART + 99)
    proxy.add(Rule("drop_response", skip=1, **CHUNK))
    store.put_bytes("a/finished", data)
    assert proxy.injected["drop_response"] == 1
    assert_stored(store, "a/finished", data)


def test_a_chunk_cut_on_the_way_is_completed_from_where_the_session_got(
    store: GcsObjectStore, proxy: FaultProxy
) -> None:
    """The session answers each chunk with the bytes it kept: what it did not get is sent
    again, never lost and never doubled."""
    data = payload(2 * PART + 5)
    proxy.add(Rule("truncate_upload", **CHUNK))
    store.put_bytes("a/partial", data)
    assert proxy.injected["truncate_upload"] == 1
    assert_stored(store, "a/partial", data)


def test_a_spent_budget_names_the_key_and_leaves_no_object(
    store: GcsObjectStore, proxy: FaultProxy, sleeps: Sleeps
) -> None:
    proxy.add(Rule("status", skip=1, times=99, **CHUNK))
    with pytest.raises(
        RemoteStorageError, match=rf"a/doomed: upload of chunk 2 failed after {ATTEMPTS} attempts"
    ):
        store.put_bytes("a/doomed", payload(2 * PART + 1))
    assert store.stat("a/doomed") is None and len(sleeps) == ATTEMPTS - 1


def test_a_permanent_error_is_not_retried(
    store: GcsObjectStore, proxy: FaultProxy, sleeps: Sleeps
) -> None:
    proxy.add(Rule("status", method="POST", status=403, times=99))
    before = proxy.requests
    with pytest.raises(RemoteStorageError, match=r"a/denied: upload failed: 403"):
        store.put_bytes("a/denied", b"x")
    assert proxy.requests - before == 1 and sleeps == []


def test_deletes_and_listings_are_retried(store: GcsObjectStore, proxy: FaultProxy) -> None:
    keys = [f"list/{i:03d}" for i in range(7)]
    for key in keys:
        store.put_bytes(key, key.encode())
    proxy.add(Rule("status", method="GET", query="prefix", status=500))
    assert list(store.list("list/")) == keys
    proxy.add(Rule("status", method="DELETE", status=503))
    store.delete(keys)
    assert proxy.injected["status"] == 2
    assert list(store.list("list/")) == []
