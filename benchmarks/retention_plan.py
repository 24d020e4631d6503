"""Benchmark: a full remote-retention plan over a large SQLite store.

Builds a store of 1,000,000 segment rows over 1,000 partitions (10 topics x 100 partitions x
1,000 segments, bulk-inserted with SQLAlchemy core), then times ``plan_store_retention`` and
prints the EXPLAIN QUERY PLAN of every query the plan issues. The target (issue 4): under 10 s.

Worst case on purpose: every row is live (no DELETE_SEGMENT_FINISHED tombstones, which the
indexed query would skip anyway), half the topics breach retention.bytes (so every finished
segment of their partitions goes through the lineage check), all topics expire about 14% of
their segments by retention.ms, and no broker log dir is given (lineage rebuilt from rows).

    .venv/bin/python benchmarks/retention_plan.py [--topics 10] [--partitions 100]
        [--segments 1000] [--db PATH] [--tombstones 0.0]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from sqlalchemy import insert, text

from tierflow.lifecycle.retention.remote import LIVE_STATES, plan_store_retention
from tierflow.metadata.models import Partition, RemoteLogSegment
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.metadata.store import MetadataStore

BASE_MS = 1_700_000_000_000
SEGMENT_MS = 600_000  # one segment rolled every 10 minutes
SEGMENT_BYTES = 1 << 20
EPOCH_EVERY = 250  # a leader change every 250 segments
BATCH = 50_000


def build(
    store: MetadataStore, *, topics: int, partitions: int, segments: int, tombstones: float
) -> None:
    now_ms = BASE_MS + segments * SEGMENT_MS
    for t in range(topics):
        breach_bytes = t % 2 == 0
        store.register_topic(
            f"topic-{t}",
            f"{t:022d}",
            actor="bench",
            now_ms=BASE_MS,
            remote_storage_enable=True,
            retention_ms=int(segments * SEGMENT_MS * 0.86),
            retention_bytes=int(segments * 0.8) * SEGMENT_BYTES if breach_bytes else -1,
        )
    dead = int(segments * tombstones)
    with store.engine.begin() as connection:
        connection.execute(
            insert(Partition),
            [
                {
                    "topic_id": f"{t:022d}",
                    "partition": p,
                    "log_start_offset": 0,
                    "local_log_start_offset": 0,
                    "highest_remote_offset": segments * 1000 - 1,
                }
                for t in range(topics)
                for p in range(partitions)
            ],
        )
    rows: list[dict] = []
    for t in range(topics):
        for p in range(partitions):
            for i in range(segments):
                start = i * 1000
                epoch = i // EPOCH_EVERY
                state = S.COPY_SEGMENT_FINISHED
                if i < dead:
                    state = S.DELETE_SEGMENT_FINISHED
                elif i == segments - 1:
                    state = S.COPY_SEGMENT_STARTED  # the copy in flight
                rows.append(
                    {
                        "segment_id": f"{t:03d}{p:05d}{i:07d}".ljust(22, "A"),
                        "topic_id": f"{t:022d}",
                        "partition": p,
                        "start_offset": start,
                        "end_offset": start + 999,
                        "max_timestamp_ms": BASE_MS + i * SEGMENT_MS,
                        "leader_epoch": epoch,
                        "segment_leader_epochs": json.dumps([[epoch, start]]),
                        "segment_size_bytes": SEGMENT_BYTES,
                        "state": state.value,
                        "tiered_epoch": 1,
                        "event_timestamp_ms": now_ms - 1,
                        "txn_index_empty": True,
                        "owner": "bench",
                        "created_ms": now_ms - 1,
                    }
                )
                if len(rows) == BATCH:
                    _flush(store, rows)
    _flush(store, rows)
    with store.engine.begin() as connection:
        connection.execute(text("ANALYZE"))


def _flush(store: MetadataStore, rows: list[dict]) -> None:
    if rows:
        with store.engine.begin() as connection:
            connection.execute(insert(RemoteLogSegment), rows)
        rows.clear()


def explain(store: MetadataStore) -> None:
    states = ", ".join(f"'{s.value}'" for s in LIVE_STATES)
    queries = {
        "topics": "SELECT * FROM topics",
        "partitions of a topic": (
            "SELECT * FROM partitions WHERE topic_id = '0000000000000000000000' "
            "ORDER BY topic_id, partition"
        ),
        "live segments of a partition (segment_summaries)": (
            "SELECT segment_id, start_offset, end_offset, max_timestamp_ms, "
            "segment_leader_epochs, segment_size_bytes, state, created_ms "
            "FROM remote_log_segments WHERE topic_id = '0000000000000000000000' "
            f"AND partition = 7 AND state IN ({states})"
        ),
    }
    with store.engine.connect() as connection:
        for name, sql in queries.items():
            print(f"EXPLAIN QUERY PLAN -- {name}")
            for row in connection.execute(text(f"EXPLAIN QUERY PLAN {sql}")):
                print(f"    {row[-1]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=10)
    parser.add_argument("--partitions", type=int, default=100)
    parser.add_argument("--segments", type=int, default=1000)
    parser.add_argument("--tombstones", type=float, default=0.0, help="fraction DELETE_FINISHED")
    parser.add_argument("--db", type=Path, default=None)
    args = parser.parse_args()
    db = args.db or Path(tempfile.mkdtemp(prefix="tierflow-retention-bench-")) / "metadata.db"
    store = MetadataStore(f"sqlite:///{db}")
    total = args.topics * args.partitions * args.segments
    count = store.engine.connect().execute(text("SELECT count(*) FROM remote_log_segments"))
    if count.scalar_one() != total:
        started = time.perf_counter()
        build(
            store,
            topics=args.topics,
            partitions=args.partitions,
            segments=args.segments,
            tombstones=args.tombstones,
        )
        print(f"built {total:,} segment rows in {time.perf_counter() - started:.1f} s ({db})")
    now_ms = BASE_MS + args.segments * SEGMENT_MS
    started = time.perf_counter()
    plans = plan_store_retention(store, now_ms=now_ms)
    elapsed = time.perf_counter() - started
    deletions = sum(len(p.deletions) for p in plans)
    reasons: dict[str, int] = {}
    for plan in plans:
        for deletion in plan.deletions:
            reasons[deletion.reason.value] = reasons.get(deletion.reason.value, 0) + 1
    print(
        f"planned {len(plans):,} partitions / {total:,} rows in {elapsed:.2f} s: "
        f"{deletions:,} deletions {reasons}"
    )
    explain(store)
    store.close()


if __name__ == "__main__":
    main()
