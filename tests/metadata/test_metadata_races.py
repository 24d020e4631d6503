"""Real multi-process races on one SQLite file: the database picks exactly one winner.

Spawning interpreters is the slow part, so one set of 8 processes runs all the races (see
``metadata_support.RACES``), each over RACE_ITEMS contested rows, and each test checks one race.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.metadata.metadata_support import (
    RACE_ITEMS,
    TOPIC_ID,
    add_segment,
    db_url,
    new_store,
    race_all,
    race_migrate,
    race_segment_id,
    run_race,
)
from tierflow.metadata import MetadataStore, RemoteLogSegmentState

WORKERS = 8
S = RemoteLogSegmentState

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def raced(tmp_path_factory: pytest.TempPathFactory) -> tuple[MetadataStore, dict[str, dict]]:
    """The store after the races, and each race's {worker: [result per item]}."""
    tmp_path = tmp_path_factory.mktemp("race")
    store = new_store(tmp_path)
    for item in range(RACE_ITEMS):
        store.ensure_partition(TOPIC_ID, item, log_start_offset=0, local_log_start_offset=0)
    for item in range(RACE_ITEMS):
        # One partition per item: [0, 99] already copied, [100, 199 + item] being copied.
        add_segment(store, race_segment_id("delete_started", item), 0, 99, partition=item)
        copying = race_segment_id("copy_finished", item)
        add_segment(store, copying, 100, 199 + item, partition=item)
        store.transition_segment(
            race_segment_id("delete_started", item), S.COPY_SEGMENT_FINISHED, actor="c", now_ms=1
        )

    per_worker = run_race(race_all, [(db_url(tmp_path), i) for i in range(WORKERS)])

    by_race: dict[str, dict] = {}
    for worker, results in per_worker.items():
        for race, outcomes in results.items():
            by_race.setdefault(race, {})[worker] = outcomes
    return store, by_race


def _winners(outcomes: dict[int, list[object]]) -> list[int]:
    """The one winning worker of each item; fails unless every other attempt returned False."""
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
        ("copy_finished", S.COPY_SEGMENT_STARTED, S.COPY_SEGMENT_FINISHED),
        ("delete_started", S.COPY_SEGMENT_FINISHED, S.DELETE_SEGMENT_STARTED),
    ],
)
def test_racing_transition_has_exactly_one_winner(raced: tuple, race: str, src: S, dst: S) -> None:
    store, by_race = raced
    for item, winner in enumerate(_winners(by_race[race])):
        segment_id = race_segment_id(race, item)
        moved = [e for e in store.events(segment_id=segment_id) if e.to_state == dst]
        assert [(e.from_state, e.actor) for e in moved] == [(src, f"worker-{winner}")]
        assert store.segment(segment_id).state == dst


def test_copy_race_winner_raised_the_highest_remote_offset(raced: tuple) -> None:
    store, _ = raced
    for item in range(RACE_ITEMS):
        assert store.partition(TOPIC_ID, item).highest_remote_offset == 199 + item


def test_racing_lease_has_exactly_one_owner(raced: tuple) -> None:
    store, by_race = raced
    for item, winner in enumerate(_winners(by_race["lease"])):
        assert store.partition(TOPIC_ID, item).lease_owner == f"owner-{winner}"


def test_processes_migrating_an_empty_database_together_all_succeed(tmp_path: Path) -> None:
    url = db_url(tmp_path)

    results = run_race(race_migrate, [(url, i) for i in range(4)])

    assert results == dict.fromkeys(range(4), True)
    with MetadataStore(url, migrate=False) as store:
        assert store.topics() == []
