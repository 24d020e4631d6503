"""Shared helpers for the metadata tests, and the entry points of the race worker processes.

A plain module rather than a conftest so that 'spawn' children can import the workers by name.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tierflow.metadata import (
    MetadataStore,
    RemoteLogSegmentState,
    SegmentTransition,
    StartedSegment,
)
from tierflow.metadata.lease_holder import LeaseHolder

if TYPE_CHECKING:
    import pytest

TOPIC = "orders"
TOPIC_ID = "3Ld2yxqAQXGhsYHpGRjNpw"
PARTITION = 0
NOW = 1_700_000_000_000

S = RemoteLogSegmentState

# The store backends every store test runs on (the ids of the ``store_url`` fixture).
BACKENDS = ["sqlite", "postgresql"]


def sqlite_url(base: Path) -> str:
    return f"sqlite:///{base / 'metadata.db'}"


def backend_url(request: pytest.FixtureRequest, backend: str, base: Path) -> Iterator[str]:
    """For fixtures: the URL of an empty database of ``backend``, dropped afterwards on
    PostgreSQL (a fresh database on the session's server each time)."""
    if backend == "sqlite":
        yield sqlite_url(base)
        return
    server = request.getfixturevalue("postgres_server")
    name = server.create_database()
    yield server.url(name)
    server.discard_database(name)


def new_store(url: str, *, with_partition: bool = True) -> MetadataStore:
    """A migrated store at ``url`` (an empty database: see the ``store_url`` fixture)."""
    store = MetadataStore(url)
    if with_partition:
        store.register_topic(TOPIC, TOPIC_ID, actor="test", now_ms=NOW, remote_storage_enable=True)
        store.ensure_partition(
            TOPIC_ID, PARTITION, log_start_offset=0, local_log_start_offset=0, now_ms=NOW
        )
    return store


def dead_holder() -> LeaseHolder:
    """A process of this host that ran and is gone (killed, reaped): a killed run's."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    holder = LeaseHolder.of(child.pid)
    child.kill()
    child.wait()
    return holder


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
    }
    call: dict[str, Any] = {"actor": "copier", "now_ms": NOW}
    for name, value in overrides.items():
        (call if name in ("actor", "now_ms", "lease") else fields)[name] = value
    store.add_segment(StartedSegment(**fields), **call)


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
        moved = SegmentTransition(segment_id, dst)
        assert store.transition_segment(moved, actor="setup", now_ms=NOW + step)


# -- race workers (run in 'spawn' children) ---------------------------------------------------

# Many contested items per race, so that the workers really overlap: with one item, the first
# process released by the barrier often finishes before the others have even started.
RACE_ITEMS = 30
# Each race, and the segment state it drives its items to (None: not a segment transition).
RACES: dict[str, RemoteLogSegmentState | None] = {
    "copy_started": RemoteLogSegmentState.COPY_SEGMENT_STARTED,  # add_segment, same id
    "copy_finished": RemoteLogSegmentState.COPY_SEGMENT_FINISHED,
    "delete_started": RemoteLogSegmentState.DELETE_SEGMENT_STARTED,
    "lease": None,  # acquire_lease of one partition per item
    "takeover": None,  # take_lease over a gone process's lease of one partition per item
}
# The takeover race's partitions: their leases are held by a process that is gone.
TAKEOVER_PARTITIONS = range(RACE_ITEMS, 2 * RACE_ITEMS)
CLAIMED_RANGE = (300, 399)  # the offsets of the segment the copy_started race adds


def race_segment_id(race: str, item: int) -> str:
    return f"{race}-{item}"


def race_all(url: str, worker: int, barrier: Any, out: Any) -> None:
    """Run every race in RACES; all workers start each race together and try every item.

    Puts ``(worker, {race: [result per item]})``; a result is True (this worker won), False
    (another did) or an error text.
    """
    store = MetadataStore(url, migrate=False)
    results: dict[str, list[object]] = {}
    try:
        for race in RACES:
            barrier.wait(timeout=60)
            results[race] = [_attempt(store, worker, race, item) for item in range(RACE_ITEMS)]
        # Every worker lives until all are done: a takeover winner that exited first would be
        # a gone process whose lease a slower worker may rightly take over in turn.
        barrier.wait(timeout=60)
    finally:
        store.close()
        out.put((worker, results))


def _attempt(store: MetadataStore, worker: int, race: str, item: int) -> object:
    try:
        if race == "lease":
            return store.acquire_lease(TOPIC_ID, item, f"owner-{worker}", now_ms=NOW, ttl_ms=60_000)
        if race == "takeover":
            here = LeaseHolder.this_process()  # each worker is a live process of this host
            partition, owner = TAKEOVER_PARTITIONS[item], f"rerun-{worker}"
            taken = store.take_lease(
                TOPIC_ID, partition, owner, now_ms=NOW, ttl_ms=60_000, holder=here
            )
            return taken is not None
        if race == "copy_started":
            return _claim_copy(store, worker, item)
        target = RACES[race]
        assert target is not None
        return store.transition_segment(
            SegmentTransition(race_segment_id(race, item), target),
            actor=f"worker-{worker}",
            now_ms=NOW + worker,
        )
    except Exception as exc:  # reported; the parent fails the test with the message
        return f"{type(exc).__name__}: {exc}"


def _claim_copy(store: MetadataStore, worker: int, item: int) -> bool:
    """Add the same segment as every other worker; True if our row is the one that exists."""
    start, end = CLAIMED_RANGE
    segment_id = race_segment_id("copy_started", item)
    add_segment(store, segment_id, start, end, partition=item, actor=f"worker-{worker}")
    return store.segment(segment_id).owner == f"worker-{worker}"


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
