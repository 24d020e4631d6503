"""The copy lease as a rerun meets it: the TTL configured now applies to a lease already held,
and a CLI run takes over a lease whose process is provably gone, never one that still runs.

Holders are real processes: this one, and a child that is killed and reaped."""

from __future__ import annotations

import dataclasses
import logging

import pytest

from tests.metadata.metadata_support import NOW, PARTITION, TOPIC_ID, dead_holder, new_store
from tierflow.metadata import MetadataStore
from tierflow.metadata.errors import LeaseLostError
from tierflow.metadata.lease_holder import LeaseHolder
from tierflow.metadata.partition_registry import hold_lease, lease_until_ms

MINUTE = 60_000


def take(store: MetadataStore, owner: str, now_ms: int, ttl_ms: int, holder=None):
    return store.take_lease(TOPIC_ID, PARTITION, owner, now_ms=now_ms, ttl_ms=ttl_ms, holder=holder)


@pytest.mark.parametrize(
    ("held_ttl", "now_ttl", "after", "taken"),
    [
        (15 * MINUTE, 1 * MINUTE, 1 * MINUTE, True),  # lowered after a kill: free sooner
        (15 * MINUTE, 1 * MINUTE, 1 * MINUTE - 1, False),
        (1 * MINUTE, 15 * MINUTE, 2 * MINUTE, False),  # raised for long runs: held longer
        (1 * MINUTE, 15 * MINUTE, 15 * MINUTE, True),
    ],
    ids=["lowered, past it", "lowered, not yet", "raised, within it", "raised, past it"],
)
def test_the_ttl_configured_now_judges_a_lease_already_held(
    store_url: str, held_ttl: int, now_ttl: int, after: int, taken: bool
) -> None:
    store = new_store(store_url)
    assert take(store, "killed", NOW, held_ttl) is not None
    row = store.partition(TOPIC_ID, PARTITION)
    assert (row.lease_taken_ms, lease_until_ms(row, now_ttl)) == (NOW, NOW + now_ttl)
    assert (take(store, "next", NOW + after, now_ttl) is not None) is taken
    assert store.partition(TOPIC_ID, PARTITION).lease_owner == ("next" if taken else "killed")


def test_a_lease_taken_before_takings_were_recorded_keeps_its_expiry(store_url: str) -> None:
    """A row from before migration 0007 has no lease_taken_ms: its stored expiry judges it."""
    store = new_store(store_url)
    assert take(store, "old", NOW, MINUTE) is not None
    with store.engine.begin() as connection:
        connection.exec_driver_sql("UPDATE partitions SET lease_taken_ms = NULL")
    assert take(store, "next", NOW + 1, 1) is None
    assert take(store, "next", NOW + MINUTE, 1) is not None


def test_a_rerun_takes_over_the_lease_of_a_gone_process_and_fences_it(
    store_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    store = new_store(store_url)
    killed = take(store, "cli:h:1", NOW, 15 * MINUTE, dead_holder())
    assert killed is not None
    here = LeaseHolder.this_process()
    with caplog.at_level(logging.WARNING):
        rerun = take(store, "cli:h:2", NOW + 1, 15 * MINUTE, here)
    assert rerun is not None and "its process (pid" in caplog.text
    row = store.partition(TOPIC_ID, PARTITION)
    assert (row.lease_owner, LeaseHolder.from_json(row.lease_holder)) == ("cli:h:2", here)
    with pytest.raises(LeaseLostError), store.engine.begin() as connection:
        hold_lease(connection, killed)  # the killed run's writes are fenced
    with store.engine.begin() as connection:
        hold_lease(connection, rerun)


@pytest.mark.parametrize(
    "holder",
    [
        LeaseHolder.this_process,
        lambda: dataclasses.replace(dead_holder(), host="another-host"),
    ],
    ids=["alive here", "gone, but on another host"],
)
def test_a_lease_whose_holder_may_run_is_not_taken(store_url: str, holder) -> None:
    store = new_store(store_url)
    assert take(store, "cli:other", NOW, 15 * MINUTE, holder()) is not None
    assert take(store, "cli:rerun", NOW + 1, 15 * MINUTE, LeaseHolder.this_process()) is None
    assert store.partition(TOPIC_ID, PARTITION).lease_owner == "cli:other"


def test_a_task_keeps_its_semantics(store_url: str) -> None:
    """An Airflow task passes no holder: it records none, takes no gone process's lease over,
    and its own owner's rerun takes its lease over at once, with a new token."""
    store = new_store(store_url)
    assert take(store, "cli:h:1", NOW, 15 * MINUTE, dead_holder()) is not None
    assert take(store, "airflow:segment_copy:orders-0", NOW + 1, 15 * MINUTE) is None
    store.release_lease(TOPIC_ID, PARTITION, "cli:h:1")
    row = store.partition(TOPIC_ID, PARTITION)
    assert (row.lease_owner, row.lease_taken_ms, row.lease_holder) == (None, None, None)
    first = take(store, "airflow:segment_copy:orders-0", NOW, 15 * MINUTE)
    again = take(store, "airflow:segment_copy:orders-0", NOW + 1, 15 * MINUTE)
    assert first is not None and again is not None and again.token != first.token
    assert store.partition(TOPIC_ID, PARTITION).lease_holder is None
