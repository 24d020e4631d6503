"""The Azure Blob store against a misbehaving Azure: Azurite behind the fault proxy.

The faults are injected on the wire, below the Azure SDK: 5xx and throttling answers, a reset
in the middle of a staged upload, a stall past the read timeout, a download cut short, a
commit whose answer was lost, and an upload cut short on the way. Transient faults are
retried and end in the exact blob; the cut upload is refused by the server; permanent faults
and spent budgets fail at once with the key named, and leave no blob behind.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import pytest

from tests.s3.test_s3_faults import Sleeps, payload
from tests.support.azurite import ACCOUNT, ACCOUNT_KEY, Azurite
from tests.support.s3_fault_proxy import FaultProxy, Rule, running_fault_proxy
from tierflow.rsm import RemoteStorageError
from tierflow.storage.azure_blob import AzureBlobObjectStore
from tierflow.storage.azure_handover import AzureClientSpec
from tierflow.storage.object_store import ObjectStore
from tierflow.storage.retry import RetryPolicy

TIMEOUT_S = 1
ATTEMPTS = 4
PART = 64 * 1024
STAGE = {"method": "PUT", "query": "comp", "query_value": "block"}
COMMIT = {"method": "PUT", "query": "comp", "query_value": "blocklist"}


@pytest.fixture
def proxy(azurite: Azurite) -> Iterator[FaultProxy]:
    with running_fault_proxy(azurite.endpoint.rsplit("/", 1)[0]) as running:
        yield running


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def store(proxy: FaultProxy, azure_container: str, sleeps: Sleeps) -> AzureBlobObjectStore:
    spec = AzureClientSpec(f"{proxy.endpoint}/{ACCOUNT}", ACCOUNT, account_key=ACCOUNT_KEY)
    policy = RetryPolicy(attempts=ATTEMPTS, base_delay_s=0.05, max_delay_s=0.4, sleep=sleeps)
    client = spec.container(azure_container, timeout_s=TIMEOUT_S)
    return AzureBlobObjectStore(
        azure_container, prefix="faults", part_size=PART, client=client, retry=policy
    )


def assert_stored(store: ObjectStore, key: str, data: bytes) -> None:
    """The object reads back whole and its stat has the size and sha256 of ``data``."""
    assert store.read_range(key) == data
    found = store.stat(key)
    assert found is not None and found.size == len(data)
    assert found.sha256 == hashlib.sha256(data).hexdigest()


def test_a_503_and_throttling_are_retried_and_the_blob_is_exact(
    store: AzureBlobObjectStore, proxy: FaultProxy
) -> None:
    proxy.add(Rule("status", method="PUT", status=503, code="ServerBusy"))
    proxy.add(Rule("status", method="PUT", status=429, code="TooManyRequests"))
    data = payload(1000)
    store.put_bytes("a/one", data)
    assert proxy.injected["status"] == 2
    assert_stored(store, "a/one", data)


def test_a_reset_while_staging_resends_only_that_block(
    store: AzureBlobObjectStore, proxy: FaultProxy
) -> None:
    data = payload(2 * PART + 1234)  # three blocks
    proxy.add(Rule("reset", skip=1, **STAGE))
    store.put_chunks("a/blocks", (data[i : i + 10_000] for i in range(0, len(data), 10_000)))
    assert proxy.injected["reset"] == 1
    assert_stored(store, "a/blocks", data)


def test_a_stall_past_the_timeout_and_a_cut_download_are_retried(
    store: AzureBlobObjectStore, proxy: FaultProxy, sleeps: Sleeps
) -> None:
    data = payload(3 * 1024 * 1024 + 17)
    store.put_bytes("a/big", data)
    proxy.add(Rule("stall", method="GET", seconds=TIMEOUT_S + 1.0, then_close=True))
    assert store.read_range("a/big", 100, 200) == data[100:200]
    assert proxy.injected["stall"] == 1 and len(sleeps) == 1
    proxy.add(Rule("truncate_download", method="GET", times=2))
    assert b"".join(store.iter_chunks("a/big", 256 * 1024)) == data
    assert proxy.injected["truncate_download"] == 2


def test_a_commit_whose_answer_was_lost_is_committed_again(
    store: AzureBlobObjectStore, proxy: FaultProxy
) -> None:
    data = payload(PART + 99)
    proxy.add(Rule("drop_response", **COMMIT))
    store.put_bytes("a/committed", data)
    assert proxy.injected["drop_response"] == 1
    assert_stored(store, "a/committed", data)


def test_a_partial_upload_is_refused_for_its_signed_length(
    store: AzureBlobObjectStore, proxy: FaultProxy
) -> None:
    """Unlike S3 (tests/s3/test_s3_faults.py), Azure signs Content-Length with the shared key:
    a body cut on the way fails authentication, for good, and no blob is left."""
    proxy.add(Rule("truncate_upload", method="PUT"))
    with pytest.raises(RemoteStorageError, match=r"a/partial: upload failed: AuthorizationFailure"):
        store.put_bytes("a/partial", payload(50_000))
    assert proxy.injected["truncate_upload"] == 1
    assert store.stat("a/partial") is None


def test_a_spent_budget_names_the_key_and_leaves_no_blob(
    store: AzureBlobObjectStore, proxy: FaultProxy, sleeps: Sleeps
) -> None:
    proxy.add(Rule("status", skip=1, times=99, **STAGE))
    with pytest.raises(
        RemoteStorageError, match=rf"a/doomed: upload of block 2 failed after {ATTEMPTS} attempts"
    ):
        store.put_bytes("a/doomed", payload(2 * PART + 1))
    assert proxy.injected["status"] == ATTEMPTS
    assert store.stat("a/doomed") is None and len(sleeps) == ATTEMPTS - 1


def test_a_permanent_error_is_not_retried(
    store: AzureBlobObjectStore, proxy: FaultProxy, sleeps: Sleeps
) -> None:
    proxy.add(Rule("status", method="PUT", status=403, code="AuthorizationFailure", times=99))
    before = proxy.requests
    with pytest.raises(RemoteStorageError, match=r"a/denied: upload failed: AuthorizationFailure"):
        store.put_bytes("a/denied", b"x")
    assert proxy.requests - before == 1 and sleeps == []


def test_deletes_and_listings_are_retried(store: AzureBlobObjectStore, proxy: FaultProxy) -> None:
    keys = [f"list/{i:03d}" for i in range(7)]
    for key in keys:
        store.put_bytes(key, key.encode())
    proxy.add(Rule("status", method="GET", query="comp", query_value="list", status=500))
    assert list(store.list("list/")) == keys
    proxy.add(Rule("status", method="DELETE", status=503))
    store.delete(keys)
    assert proxy.injected["status"] == 2
    assert list(store.list("list/")) == []
