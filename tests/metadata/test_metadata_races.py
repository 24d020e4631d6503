"""Real multi-process races, on one SQLite file and on one PostgreSQL database: the database
picks exactly one winner, and no loser sees an error (no deadlock, no serialization failure).

Spawning interpreters is the slow part, so per backend one set of 8 processes runs all the
races (see ``metadata_support.RACES``), each over RACE_ITEMS contested rows, and each test
checks one race.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.metadata.metadata_support import (
    BACKENDS,
    CLAIMED_RANGE,
    RACE_ITEMS,
    RACES,
    TAKEOVER_PARTITIONS,
    TOPIC_ID,
    add_segment,
    backend_url,
    dead_holder,
    new_store,
    race_all,
    race_migrate,
    race_segment_id,
    run_race,
)
from tierflow.metadata import MetadataStore, RemoteLogSegmentState, SegmentTransition

WORKERS = 8
S = RemoteLogSegmentState

pytestmark = pytest.mark.slow

Raced = tuple[MetadataStore, dict[str, dict[int, list[object]]]]


@pytest.fixture(scope="module", params=BACKENDS)
def race_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    yield from backend_url(request, request.param, tmp_path_factory.mktemp("race"))


@pytest.fixture(scope="module")
def raced(race_url: str) -> Iterator[Raced]:
    """The store after the races, and each race's {worker: [result per item]}."""
    store = new_store(race_url)
    for item in range(RACE_ITEMS):
        store.ensure_partition(TOPIC_ID, item, log_start_offset=0, local_log_start_offset=0)
    for item in range(RACE_ITEMS):
        # One partition per item: [0, 99] already copied, [100, 199 + item] being copied.
        add_segment(store, race_segment_id("delete_started", item), 0, 99, partition=item)
        copying = race_segment_id("copy_finished", item)
        add_segment(store, copying, 100, 199 + item, partition=item)
        store.transition_segment(
            SegmentTransition(race_segment_id("delete_started", item), S.COPY_SEGMENT_FINISHED),
            actor="c",
            now_ms=1,
        )
    gone = dead_holder()
    for partition in TAKEOVER_PARTITIONS:
        store.ensure_partition(TOPIC_ID, partition, log_start_offset=0, local_log_start_offset=0)
        store.take_lease(TOPIC_ID, partition, "killed", now_ms=1, ttl_ms=10**12, holder=gone)

    per_worker = run_race(race_all, [(race_url, i) for i in range(WORKERS)])

    by_race: dict[str, dict[int, list[object]]] = {}
    for worker, results in per_worker.items():
        for race, outcomes in results.items():
            by_race.setdefault(race, {})[worker] = outcomes
    assert sorted(by_race) == sorted(RACES)
    yield store, by_race
    store.close()


def _winners(outcomes: dict[int, list[object]]) -> list[int]:
    """The one winning worker of each item; fails unless every other attempt returned False
    (an error text, such as a deadlock or a serialization failure, fails it too)."""
    assert sorted(outcomes) == list(range(WORKERS)), outcomes
    winners = []
    for item in range(RACE_ITEMS):
        results = {worker: outcomes[worker][item] for worker in outcomes}
        won = [worker for worker, result in results.items() if result is True]
        lost = [worker for worker, result in results.items() if result is False]
        assert len(won) == 1 and len(lost) == WORKERS - 1, (item, results)
        winners.append(won[0])
    return winners


@pytest.mark.parametrize(
    ("race", "src", "dst"),
    [
        ("copy_started", None, S.COPY_SEGMENT_STARTED),
        ("copy_finished", S.COPY_SEGMENT_STARTED, S.COPY_SEGMENT_FINISHED),
        ("delete_started", S.COPY_SEGMENT_FINISHED, S.DELETE_SEGMENT_STARTED),
    ],
)
def test_racing_transition_has_exactly_one_winner(
    raced: Raced, race: str, src: S | None, dst: S
) -> None:
    store, by_race = raced
    for item, winner in enumerate(_winners(by_race[race])):
        segment_id = race_segment_id(race, item)
        moved = [e for e in store.events(segment_id=segment_id) if e.to_state == dst]
        assert [(e.from_state, e.actor) for e in moved] == [(src, f"worker-{winner}")]
        assert store.segment(segment_id).state == dst


def test_copy_race_winner_raised_the_highest_remote_offset(raced: Raced) -> None:
    store, _ = raced
    for item in range(RACE_ITEMS):
        assert store.partition(TOPIC_ID, item).highest_remote_offset == 199 + item


def test_copy_claim_race_left_one_segment_per_item(raced: Raced) -> None:
    store, _ = raced
    for item in range(RACE_ITEMS):
        claimed = store.segments(TOPIC_ID, item, states=[S.COPY_SEGMENT_STARTED])
        assert [(s.start_offset, s.end_offset) for s in claimed] == [CLAIMED_RANGE]


def test_racing_lease_has_exactly_one_owner(raced: Raced) -> None:
    store, by_race = raced
    for item, winner in enumerate(_winners(by_race["lease"])):
        assert store.partition(TOPIC_ID, item).lease_owner == f"owner-{winner}"


def test_racing_reruns_take_a_gone_process_lease_once(raced: Raced) -> None:
    """Every worker sees the killed run's process gone; the first takeover wins, and the
    others then find a live process of this host holding the lease."""
    store, by_race = raced
    for item, winner in enumerate(_winners(by_race["takeover"])):
        row = store.partition(TOPIC_ID, TAKEOVER_PARTITIONS[item])
        assert row.lease_owner == f"rerun-{winner}"


def test_history_ids_follow_each_segments_transitions(raced: Raced) -> None:
    """Event ids order each segment's history even when 8 processes append concurrently."""
    store, _ = raced
    for item in range(RACE_ITEMS):
        segment_id = race_segment_id("delete_started", item)
        states = [e.to_state for e in store.events(segment_id=segment_id)]
        assert states == [S.COPY_SEGMENT_STARTED, S.COPY_SEGMENT_FINISHED, S.DELETE_SEGMENT_STARTED]


def test_processes_migrating_an_empty_database_together_all_succeed(store_url: str) -> None:
    results = run_race(race_migrate, [(store_url, i) for i in range(4)])

    assert results == dict.fromkeys(range(4), True)
    with MetadataStore(store_url, migrate=False) as store:
        assert store.topics() == []
