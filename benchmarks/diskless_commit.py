"""Benchmark: commit throughput of the diskless coordinator, in batches per second.

Each WAL object holds 1,000 batches (``--batches``) spread over ``--partitions`` partitions, as
a writer would commit them; only the coordinator's work is timed (``register_object`` +
``commit_object``: one transaction that moves the object to COMMITTED, raises each partition's
high watermark and inserts the batch rows). No object is uploaded.

SQLite always (a file in a temp dir, WAL mode, as the store configures it); PostgreSQL when
``--postgres-url`` names an empty database, or else on a throwaway server started with the
test suite's helper (tests/support/postgres.py) when PostgreSQL's binaries are installed.

    .venv/bin/python benchmarks/diskless_commit.py [--objects 30] [--batches 1000]
        [--partitions 10] [--postgres-url URL] [--no-postgres]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from tierflow.diskless.coordinator import DisklessCoordinator
from tierflow.diskless.wal_object import HEADER_SIZE, PlacedBatch
from tierflow.metadata.store import MetadataStore

TOPIC_ID = "q2Dq7iPXQfSdD0wL4RZ0NA"
NOW = 1_800_000_000_000
BATCH_BYTES = 1_024
RECORDS_PER_BATCH = 10


def placements(batches: int, partitions: int) -> list[PlacedBatch]:
    """``batches`` batches in per-partition runs, as the writer lays an object out."""
    share, extra = divmod(batches, partitions)
    per = [share + (1 if p < extra else 0) for p in range(partitions)]
    placed = []
    position = HEADER_SIZE
    for partition, count in enumerate(per):
        for _ in range(count):
            placed.append(
                PlacedBatch(TOPIC_ID, partition, position, BATCH_BYTES, RECORDS_PER_BATCH, NOW)
            )
            position += BATCH_BYTES
    return placed


def run(url: str, *, objects: int, batches: int, partitions: int) -> dict[str, float]:
    store = MetadataStore(url)
    store.register_topic("bench", TOPIC_ID, actor="bench", now_ms=NOW)
    coordinator = DisklessCoordinator.for_store(store)
    coordinator.register_topic(TOPIC_ID, partitions, now_ms=NOW)
    placed = placements(batches, partitions)
    size = HEADER_SIZE + batches * BATCH_BYTES
    seconds = []
    for n in range(objects + 1):  # the first one warms the connection pool and caches
        key = f"diskless/wal/bench-{n:06d}"
        start = time.perf_counter()
        coordinator.register_object(key, size, writer="bench", now_ms=NOW + n)
        coordinator.commit_object(key, placed, now_ms=NOW + n)
        if n:
            seconds.append(time.perf_counter() - start)
    hwm = sum(log.high_watermark for log in coordinator.logs(TOPIC_ID))
    assert hwm == (objects + 1) * batches * RECORDS_PER_BATCH, "offsets lost"
    store.close()
    total = sum(seconds)
    return {
        "batches_per_s": objects * batches / total,
        "median_commit_ms": statistics.median(seconds) * 1000,
        "max_commit_ms": max(seconds) * 1000,
    }


@contextlib.contextmanager
def throwaway_postgres() -> Iterator[str | None]:
    root = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(root))
    try:
        from tests.support.postgres import PostgresUnavailableError, running_postgres
    except ImportError as exc:
        print(f"PostgreSQL: skipped ({exc})")
        yield None
        return
    try:
        with running_postgres() as server:
            yield server.url(server.create_database("bench"))
    except PostgresUnavailableError as exc:
        print(f"PostgreSQL: skipped ({exc})")
        yield None


def report(name: str, figures: dict[str, float], batches: int) -> None:
    print(
        f"{name:<10} {figures['batches_per_s']:>10,.0f} batches/s  "
        f"({batches:,} batches per object: median {figures['median_commit_ms']:.1f} ms "
        f"per commit, max {figures['max_commit_ms']:.1f} ms)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--objects", type=int, default=30)
    parser.add_argument("--batches", type=int, default=1_000)
    parser.add_argument("--partitions", type=int, default=10)
    parser.add_argument("--postgres-url")
    parser.add_argument("--no-postgres", action="store_true")
    args = parser.parse_args()
    shape = {"objects": args.objects, "batches": args.batches, "partitions": args.partitions}
    print(
        f"{args.objects} objects x {args.batches} batches over {args.partitions} partitions, "
        "one committer"
    )
    with tempfile.TemporaryDirectory() as tmp:
        report("SQLite", run(f"sqlite:///{tmp}/bench.db", **shape), args.batches)
    if args.no_postgres:
        return
    if args.postgres_url:
        report("PostgreSQL", run(args.postgres_url, **shape), args.batches)
        return
    with throwaway_postgres() as url:
        if url is not None:
            report("PostgreSQL", run(url, **shape), args.batches)


if __name__ == "__main__":
    main()
