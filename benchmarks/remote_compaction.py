"""How fast Spark compacts a tiered changelog, against a ceiling measured in the same run.

Data: ``--gib`` GiB of broker-shaped segments in ``--partitions`` partitions, tiered with
tierflow's copy into the chunked layout (4 MiB chunks, zstd + AES-256-GCM); then the topic
becomes ``cleanup.policy=compact`` and local retention moves the log start past it. The
records are a changelog: keys drawn Zipf-like from 200,000 entities (a few hot, a long tail),
one update in ten a tombstone, uncompressed JSON values; big_segments repeats a ~4 MiB cycle of
them, so every key's latest record lies in the last cycle and almost everything is reclaimed.

1. The ceiling: one partition's segments read through the ranged-read path (decrypt,
   decompress), every record decoded by kafka-python and hashed by key, and the kept records
   encoded into batches and written out, in a tight loop on one core, times ``--cores``:
   the compaction's own work without Spark, the shuffle or the uploads.
2. The compaction: ``spark_apps/compact_segments.py``'s stages on Spark ``local[N]`` (a task
   per source segment, the shuffle by key, a task per group writing its segment through the
   storage manager), as the remote_compaction DAG submits them (Spark's start-up and a warm-up
   job excluded); prepare and finalize (verify, FINISHED, the sources deleted) timed apart.

MiB/s counts the source segments' ``.log`` bytes, records/s the records read.

Run: .venv/bin/python benchmarks/remote_compaction.py [--gib 1] [--partitions 2]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

from big_segments import build_templates
from local_spark import local_spark, warm
from tiered_topic import MIB, tiered_arguments, tiered_settings, tiered_topic

from tierflow.kafka.batch_builder import Record, build_batch
from tierflow.kafka.read_committed import kafka_python_batches
from tierflow.lifecycle.compaction.finalize import finalize_compaction
from tierflow.lifecycle.compaction.job import CompactionJob, CompactionResult
from tierflow.lifecycle.compaction.report import CompactionOptions
from tierflow.lifecycle.compaction.swap import prepare_compaction
from tierflow.runtime import open_storage

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "spark_apps"))
from compact_segments import stages

TOPIC = "changelog"
KEYS = 200_000
RECORDS_PER_BATCH = 50


def arguments() -> argparse.Namespace:
    parser = tiered_arguments(__doc__.splitlines()[0], "tiered changelog")
    return parser.parse_args()


def changelog_record(rng: random.Random, timestamp: int) -> Record:
    """An entity's update, or one time in ten its deletion (a tombstone)."""
    entity = f"entity-{int(rng.paretovariate(0.8)) % KEYS:06d}"
    if rng.random() < 0.1:
        return Record(entity.encode(), None, timestamp)
    state = "x" * rng.randint(40, 240)
    value = f'{{"entity":"{entity}","version":{rng.randrange(10**6)},"state":"{state}"}}'
    return Record(entity.encode(), value.encode(), timestamp)


def ceiling(job: CompactionJob, settings, scratch: Path, cores: int) -> tuple[float, float]:
    """MiB/s and records/s of one partition's compaction work in this process, x ``cores``."""
    rsm = open_storage(settings)
    started = time.perf_counter()
    size = records = 0
    latest: dict[bytes, object] = {}
    for source in job.sources:
        data = b"".join(rsm.iter_log_segment(source))
        size += len(data)
        for batch in kafka_python_batches(data):
            for record in batch:
                latest[record.key] = record
                records += 1
    kept = sorted(latest.values(), key=lambda r: r.offset)
    with open(scratch / "ceiling.log", "wb") as out:
        for i in range(0, len(kept), RECORDS_PER_BATCH):
            chunk = kept[i : i + RECORDS_PER_BATCH]
            rows = [Record(r.key, r.value, r.timestamp, tuple(r.headers)) for r in chunk]
            deltas = [r.offset - chunk[0].offset for r in chunk]
            out.write(
                build_batch(rows, base_offset=chunk[0].offset, leader_epoch=0, offset_deltas=deltas)
            )
        os.fsync(out.fileno())
    seconds = time.perf_counter() - started
    return size / MIB / seconds * cores, records / seconds * cores


def spark_compaction(settings, jobs: list[CompactionJob], cores: int) -> tuple[float, list[dict]]:
    spark = local_spark(cores, "tierflow-remote-compaction-benchmark")
    try:
        warm(spark, lambda part: iter(()))  # the Python workers start
        started = time.perf_counter()
        results = stages(spark, settings, [job.as_dict() for job in jobs], None)
        return time.perf_counter() - started, results
    finally:
        spark.stop()


def main() -> None:
    args = arguments()
    print(f"load avg before {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(prefix="tierflow-bench-") as tmp:
        base = Path(tmp)
        settings = tiered_settings(base)
        templates = build_templates(records_per_batch=RECORDS_PER_BATCH, make=changelog_record)
        _, store, rsm = tiered_topic(settings, TOPIC, args, templates)
        plans, prepare_s = prepare(store, rsm, args.segment_mib)
        jobs = [plan.job for plan in plans]
        print("ceiling (one partition, one core) ...", flush=True)
        ceiling_mib, ceiling_records = ceiling(jobs[0], settings, base, args.cores)
        print(f"compacting {len(jobs)} partitions on Spark local[{args.cores}] ...", flush=True)
        seconds, results = spark_compaction(settings, jobs, args.cores)
        by_id = {r["segment_id"]: CompactionResult.from_dict(r) for r in results}
        started = time.perf_counter()
        reports = [finalize_compaction(plan, by_id, store, rsm) for plan in plans]
        finalize_s = time.perf_counter() - started
    report(jobs, reports, seconds, (ceiling_mib, ceiling_records), (prepare_s, finalize_s))


def prepare(store, rsm, segment_mib: int) -> tuple[list, float]:
    """The topic turned compacted, its local log start past the tiered data; every partition
    prepared (forced: the whole range is dirty anyway)."""
    topic = store.topic(TOPIC)
    store.register_topic(TOPIC, topic.topic_id, actor="bench", now_ms=0,
                         cleanup_policy="compact", segment_bytes=segment_mib * MIB)  # fmt: skip
    started, plans = time.perf_counter(), []
    for state in store.partitions(topic.topic_id):
        end = state.highest_remote_offset + 1
        store.advance_local_log_start_offset(
            topic.topic_id, state.partition, end, actor="bench", now_ms=0
        )
        options = CompactionOptions(now_ms=int(time.time() * 1000), force=True)
        plans.append(
            prepare_compaction(store, rsm, topic.topic_id, state.partition, options, owner="bench")
        )
    return plans, time.perf_counter() - started


def report(
    jobs, reports, seconds: float, ceiling: tuple[float, float], airflow: tuple[float, float]
) -> None:
    size = sum(job.source_bytes for job in jobs)
    records = sum(s.end_offset - s.start_offset + 1 for job in jobs for s in job.sources)
    written = sum(w[2] for r in reports for w in r.written)
    rate = size / MIB / seconds
    print()
    print("== Remote compaction throughput ==")
    print(f"data             {size / MIB:.0f} MiB of tiered segments, {records:,} records")
    print(f"ceiling          {ceiling[0]:6.1f} MiB/s, {ceiling[1]:,.0f} records/s")
    print(
        f"compaction, Spark {rate:5.1f} MiB/s, {records / seconds:,.0f} records/s, "
        f"{rate / ceiling[0]:.0%} of the ceiling (job {seconds:.2f} s)"
    )
    reclaimed = size - written
    print(
        f"reclaimed        {reclaimed / MIB:.1f} MiB ({reclaimed / size:.1%}); "
        f"{written / MIB:.1f} MiB kept"
    )
    print(f"prepare {airflow[0]:.2f} s, finalize {airflow[1]:.2f} s (Airflow's part)")


if __name__ == "__main__":
    main()
