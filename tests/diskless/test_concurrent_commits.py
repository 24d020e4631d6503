"""Writers in separate processes commit interleaved objects: every partition's offsets come
out gap-free and duplicate-free, and each writer's batches keep their order.

On SQLite (one writer at a time, queued by the busy timeout) and on PostgreSQL (row locks on
the partitions' logs, taken in one order)."""

from __future__ import annotations

import itertools
from pathlib import Path

from tests.diskless.diskless_support import (
    PARTITIONS,
    TOPIC_ID,
    WRITER_BATCHES,
    WRITER_OBJECTS,
    Env,
    batch_tag,
    values_of,
    write_objects,
)
from tests.metadata.metadata_support import run_race
from tierflow.read.diskless import plan_fetch, read_planned

WORKERS = 4


def test_concurrent_writers_get_gap_free_duplicate_free_offsets(env: Env, store_url: str) -> None:
    results = run_race(write_objects, [(store_url, str(env.bucket), w) for w in range(WORKERS)])
    errors = {w: r for w, r in results.items() if isinstance(r, str)}
    assert not errors, errors
    objects = {o.object_key for o in env.coordinator.wal_objects()}
    assert len(objects) == WORKERS * WRITER_OBJECTS
    for partition in range(PARTITIONS):
        rows = env.coordinator.partition_batches(TOPIC_ID, partition)
        # Gap-free and duplicate-free: each batch starts right after the previous one.
        expected = 0
        for row in rows:
            assert row.base_offset == expected, (partition, row)
            expected = row.last_offset + 1
        assert env.coordinator.log(TOPIC_ID, partition).high_watermark == expected
        assert len(rows) == WORKERS * WRITER_OBJECTS * WRITER_BATCHES
        # The commits really interleaved: the writers' batches alternate in the log.
        owner = {o.object_key: o.writer for o in env.coordinator.wal_objects()}
        writers = [owner[r.object_key] for r in rows]
        switches = sum(1 for a, b in itertools.pairwise(writers) if a != b)
        print(f"partition {partition}: the writer changed {switches} times")
        assert switches > WORKERS - 1, "the writers ran one after the other, not concurrently"
    # Each writer saw its own batches in order, and the offsets it was told are the stored ones.
    told = {}
    for worker, assigned in results.items():
        for partition in range(PARTITIONS):
            mine = [base for tag, p, base in assigned if p == partition]
            assert mine == sorted(mine), (worker, partition)
        for tag, partition, base in assigned:
            told[(partition, base)] = tag
    # Read everything back through the read path: the values are the batches that were told
    # those offsets.
    for partition in range(PARTITIONS):
        offset = 0
        while offset < env.coordinator.log(TOPIC_ID, partition).high_watermark:
            plan = plan_fetch(env.coordinator, TOPIC_ID, partition, offset, max_bytes=1 << 16)
            fetched = read_planned(env.objects, plan)
            for batch, coordinate in zip(fetched.batches, plan.batches, strict=True):
                tag = told[(partition, coordinate.base_offset)]
                assert values_of(batch)[0].startswith(f"{tag}#0:".encode())
            offset = fetched.next_offset
    assert len(told) == WORKERS * WRITER_OBJECTS * WRITER_BATCHES * PARTITIONS
    assert batch_tag(0, 0, 0, 0) in told.values()


def test_the_bucket_holds_exactly_the_committed_objects(env: Env, store_url: str) -> None:
    run_race(write_objects, [(store_url, str(env.bucket), w) for w in range(2)])
    files = [p for p in Path(env.bucket).rglob("*") if p.is_file()]
    stored = {p.relative_to(env.bucket).as_posix() for p in files}
    assert stored == {o.object_key for o in env.coordinator.wal_objects()}
