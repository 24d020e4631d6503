"""Partition registration, forward-only start offsets and the copy lease."""

from __future__ import annotations

import pytest

from tests.metadata.metadata_support import NOW, PARTITION, TOPIC_ID, new_store
from tierflow.metadata import UnknownPartitionError, UnknownTopicError


def test_ensure_partition_registers_once_then_only_advances(store_url: str) -> None:
    store = new_store(store_url)  # registers partition 0 at offsets (0, 0)
    store.ensure_partition(
        TOPIC_ID, PARTITION, log_start_offset=0, local_log_start_offset=0, now_ms=NOW
    )
    assert [e.to_state for e in store.events(entity="partition")] == ["REGISTERED"]

    moved = store.ensure_partition(
        TOPIC_ID, PARTITION, log_start_offset=10, local_log_start_offset=50, actor="a", now_ms=NOW
    )
    assert (moved.log_start_offset, moved.local_log_start_offset) == (10, 50)
    back = store.ensure_partition(
        TOPIC_ID, PARTITION, log_start_offset=5, local_log_start_offset=60, actor="a", now_ms=NOW
    )
    assert (back.log_start_offset, back.local_log_start_offset) == (10, 60)

    advanced = [e.details_dict for e in store.events(entity="partition")][1:]
    assert advanced == [
        {"log_start_offset": [0, 10], "local_log_start_offset": [0, 50]},
        {"local_log_start_offset": [50, 60]},
    ]


def test_ensure_partition_checks_its_inputs(store_url: str) -> None:
    store = new_store(store_url)
    with pytest.raises(UnknownTopicError):
        store.ensure_partition(
            "AAAAAAAAAAAAAAAAAAAAAg", 0, log_start_offset=0, local_log_start_offset=0
        )
    with pytest.raises(ValueError, match="negative start offset"):
        store.ensure_partition(TOPIC_ID, 1, log_start_offset=0, local_log_start_offset=-1)


def test_partitions_listing(store_url: str) -> None:
    store = new_store(store_url)
    store.ensure_partition(TOPIC_ID, 2, log_start_offset=0, local_log_start_offset=0, now_ms=NOW)
    store.ensure_partition(TOPIC_ID, 1, log_start_offset=0, local_log_start_offset=0, now_ms=NOW)
    assert [p.partition for p in store.partitions(TOPIC_ID)] == [0, 1, 2]
    assert [p.partition for p in store.partitions()] == [0, 1, 2]
    assert store.partitions("AAAAAAAAAAAAAAAAAAAAAg") == []
    assert store.partition(TOPIC_ID, 7) is None


def test_lease_is_exclusive_until_it_expires(store_url: str) -> None:
    store = new_store(store_url)
    assert store.acquire_lease(TOPIC_ID, PARTITION, "a", now_ms=1000, ttl_ms=100)
    assert not store.acquire_lease(TOPIC_ID, PARTITION, "b", now_ms=1099, ttl_ms=100)
    assert store.acquire_lease(TOPIC_ID, PARTITION, "a", now_ms=1050, ttl_ms=100)  # renew
    assert store.partition(TOPIC_ID, PARTITION).lease_expires_ms == 1150
    assert not store.acquire_lease(TOPIC_ID, PARTITION, "b", now_ms=1149, ttl_ms=100)
    assert store.acquire_lease(TOPIC_ID, PARTITION, "b", now_ms=1150, ttl_ms=100)  # expired
    row = store.partition(TOPIC_ID, PARTITION)
    assert (row.lease_owner, row.lease_expires_ms) == ("b", 1250)


def test_release_only_by_the_owner(store_url: str) -> None:
    store = new_store(store_url)
    assert store.acquire_lease(TOPIC_ID, PARTITION, "a", now_ms=0, ttl_ms=1000)
    assert store.release_lease(TOPIC_ID, PARTITION, "b") is False
    assert store.partition(TOPIC_ID, PARTITION).lease_owner == "a"
    assert store.release_lease(TOPIC_ID, PARTITION, "a") is True
    assert store.partition(TOPIC_ID, PARTITION).lease_owner is None
    assert store.acquire_lease(TOPIC_ID, PARTITION, "b", now_ms=1, ttl_ms=1000)


def test_lease_on_unknown_partition_raises(store_url: str) -> None:
    store = new_store(store_url)
    with pytest.raises(UnknownPartitionError, match=f"{TOPIC_ID}-3"):
        store.acquire_lease(TOPIC_ID, 3, "a", now_ms=0, ttl_ms=10)
    with pytest.raises(ValueError, match="ttl_ms must be positive"):
        store.acquire_lease(TOPIC_ID, PARTITION, "a", now_ms=0, ttl_ms=0)
