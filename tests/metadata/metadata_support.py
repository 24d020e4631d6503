"""Shared helpers for the metadata tests, and the entry points of the race worker processes.

A plain module rather than a conftest so that 'spawn' children can import the workers by name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tierflow.metadata import MetadataStore, RemoteLogSegmentState

TOPIC = "orders"
TOPIC_ID = "3Ld2yxqAQXGhsYHpGRjNpw"
PARTITION = 0
NOW = 1_700_000_000_000

S = RemoteLogSegmentState


def db_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'metadata.db'}"


def new_store(tmp_path: Path, *, with_partition: bool = True) -> MetadataStore:
    store = MetadataStore(db_url(tmp_path))
    if with_partition:
        store.register_topic(TOPIC, TOPIC_ID, actor="test", now_ms=NOW, remote_storage_enable=True)
        store.ensure_partition(
            TOPIC_ID, PARTITION, log_start_offset=0, local_log_start_offset=0, now_ms=NOW
        )
    return store


def add_segment(
    store: MetadataStore, segment_id: str, start: int = 0, end: int = 99, **overrides: Any
) -> None:
    fields: dict[str, Any] = {
        "segment_id": segment_id,
        "topic_id": TOPIC_ID,
        "partition": PARTITION,
        "start_offset": start,
        "end_offset": end,
        "max_timestamp_ms": NOW - 1,
        "segment_leader_epochs": [(0, start)],
        "segment_size_bytes": 1024,
        "txn_index_empty": True,
        "actor": "copier",
        "now_ms": NOW,
    }
    fields.update(overrides)
    store.add_segment(**fields)


# The shortest valid path from nothing to each state.
PATH_TO: dict[RemoteLogSegmentState, list[RemoteLogSegmentState]] = {
    S.COPY_SEGMENT_STARTED: [],
    S.COPY_SEGMENT_FINISHED: [S.COPY_SEGMENT_FINISHED],
    S.DELETE_SEGMENT_STARTED: [S.DELETE_SEGMENT_STARTED],
    S.DELETE_SEGMENT_FINISHED: [S.DELETE_SEGMENT_STARTED, S.DELETE_SEGMENT_FINISHED],
}


def segment_in_state(store: MetadataStore, segment_id: str, state: RemoteLogSegmentState) -> None:
    add_segment(store, segment_id)
    for step, dst in enumerate(PATH_TO[state], start=1):
        assert store.transition_segment(segment_id, dst, actor="setup", now_ms=NOW + step)


# -- race workers (run in 'spawn' children) ---------------------------------------------------

# Many contested items per race, so that the workers really overlap: with one item, the first
# process released by the barrier often finishes before the others have even started.
RACE_ITEMS = 30
RACES: list[tuple[str, str | None]] = [
    ("copy_finished", RemoteLogSegmentState.COPY_SEGMENT_FINISHED.value),
    ("delete_started", RemoteLogSegmentState.DELETE_SEGMENT_STARTED.value),
    ("lease", None),
]


def race_segment_id(race: str, item: int) -> str:
    return f"{race}-{item}"


def race_all(url: str, worker: int, barrier: Any, out: Any) -> None:
    """Run every race in RACES; all workers start each race together and try every item.

    Puts ``(worker, {race: [result per item]})``; a result is True, False or an error text.
    """
    store = MetadataStore(url, migrate=False)
    results: dict[str, list[object]] = {}
    try:
        for race, dst in RACES:
            barrier.wait(timeout=60)
            results[race] = [_attempt(store, worker, race, item, dst) for item in range(RACE_ITEMS)]
    finally:
        store.close()
        out.put((worker, results))


def _attempt(store: MetadataStore, worker: int, race: str, item: int, dst: str | None) -> object:
    try:
        if dst is None:
            return store.acquire_lease(TOPIC_ID, item, f"owner-{worker}", now_ms=NOW, ttl_ms=60_000)
        return store.transition_segment(
            race_segment_id(race, item),
            RemoteLogSegmentState(dst),
            actor=f"worker-{worker}",
            now_ms=NOW + worker,
        )
    except Exception as exc:  # reported; the parent fails the test with the message
        return f"{type(exc).__name__}: {exc}"


def race_migrate(url: str, worker: int, barrier: Any, out: Any) -> None:
    barrier.wait()
    try:
        MetadataStore(url, migrate=True).close()
        out.put((worker, True))
    except Exception as exc:
        out.put((worker, f"{type(exc).__name__}: {exc}"))


def run_race(target: Any, args: list[tuple[Any, ...]]) -> dict[int, Any]:
    """Start one 'spawn' process per args tuple, release them together, collect their results.

    Each worker gets ``(*args[i], barrier, queue)`` and puts ``(worker, result)`` on the queue.
    """
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(len(args))
    out = context.Queue()
    processes = [context.Process(target=target, args=(*a, barrier, out)) for a in args]
    for process in processes:
        process.start()
    try:
        results = dict(out.get(timeout=120) for _ in processes)
    finally:
        for process in processes:
            process.join(timeout=30)
            if process.is_alive():
                process.kill()
    return results
