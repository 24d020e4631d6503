"""How fast tiered segments become an Iceberg table on Spark, against a ceiling measured in the
same run.

Data: ``--gib`` GiB of broker-shaped segments (uncompressed JSON batches, big_segments'
templates) in ``--partitions`` partitions, tiered with tierflow's copy into the chunked layout
(4 MiB chunks, zstd + AES-256-GCM), the topic registered with tierflow.iceberg.export=true.

1. The ceiling: one partition's segments read through the ranged-read path (decrypt,
   decompress), parsed by kafka-python into rows, written as Parquet by pyarrow, in a tight
   loop on one core, times ``--cores``: the export's own work without Spark or the commit.
2. The export: ``spark_apps/export_iceberg.py``'s executor over Spark ``local[N]``, one Spark
   task per partition, as the iceberg_export DAG runs it (Spark's start-up and a warm-up job
   excluded), then the commit of the files to the table (pyiceberg, SQL catalog on SQLite).
   The table is then read back and its row count checked against the export's.

MiB/s counts the segments' ``.log`` bytes; records/s the rows written. The issue's goal is 60 %
of the ceiling.

Run: .venv/bin/python benchmarks/iceberg_export.py [--gib 1] [--partitions 2]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from local_spark import local_spark, timed_collect, warm
from tiered_topic import MIB, tiered_arguments, tiered_settings, tiered_topic

from tierflow.engine.kind import run_rows
from tierflow.engine.worker import Worker
from tierflow.export.catalog import settings_target
from tierflow.export.job import PARTITION_EXPORT, ExportJob
from tierflow.export.run import commit_topic, plan_topic
from tierflow.export.segment_export import export_partition
from tierflow.export.table import existing_table
from tierflow.export.warehouse import DataFiles
from tierflow.rsm import RemoteSegment
from tierflow.runtime import open_objects, open_storage

GOAL = 0.6  # the goal: the export at 60 % of the ceiling
TOPIC = "bench"


def arguments() -> argparse.Namespace:
    parser = tiered_arguments(__doc__.splitlines()[0], "tiered data to export")
    return parser.parse_args()


def ceiling(job: ExportJob, settings, cores: int) -> tuple[float, float]:
    """MiB/s and records/s of one partition's export in this process, times ``cores``."""
    rsm = open_storage(settings)
    segments = [RemoteSegment(**s) for s in job.segments]
    files = DataFiles(open_objects(settings), "ceiling", job.run_url + "-ceiling")
    started = time.perf_counter()
    done = export_partition(rsm, segments, job.from_offset, files)
    seconds = time.perf_counter() - started
    return done.size_in_bytes / MIB / seconds * cores, done.records / seconds * cores


def spark_export(settings, rows: list[dict], cores: int) -> tuple[float, list[dict]]:
    """Seconds of the timed collect() over one Spark task per partition, and the results."""
    spark = local_spark(cores, "tierflow-iceberg-export-benchmark")
    try:

        def work(part: Iterator[dict]) -> Iterator[dict]:
            return run_rows(PARTITION_EXPORT, Worker(settings), part)

        warm(spark, work)
        return timed_collect(spark, rows, work)
    finally:
        spark.stop()


def main() -> None:
    args = arguments()
    print(f"load avg before {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(prefix="tierflow-bench-") as tmp:
        base = Path(tmp)
        settings = tiered_settings(base)
        store = tiered_topic(settings, TOPIC, args)[1]
        store.register_topic(TOPIC, store.topic(TOPIC).topic_id, actor="bench", now_ms=0,
                             iceberg_export=True)  # fmt: skip
        target = settings_target(settings, open_objects(settings))
        catalog = target.catalog
        plan = plan_topic(store, target, store.topic(TOPIC), run="bench")
        print("ceiling (one partition, one core) ...", flush=True)
        ceiling_mib, ceiling_records = ceiling(plan.jobs[0], settings, args.cores)
        print(f"exporting {len(plan.jobs)} partitions on Spark local[{args.cores}] ...")
        seconds, results = spark_export(settings, [j.as_dict() for j in plan.jobs], args.cores)
        started = time.perf_counter()
        report = commit_topic(store, catalog, plan.report, results)
        commit_s = time.perf_counter() - started
        read_back = existing_table(catalog, TOPIC).scan().to_arrow().num_rows
    if read_back != report.records:
        raise RuntimeError(f"the table holds {read_back} rows, the export wrote {report.records}")
    size = sum(job.size_in_bytes for job in plan.jobs)
    rate, records = size / MIB / seconds, report.records / seconds
    verdict = "meets" if rate / ceiling_mib >= GOAL else "misses"
    print()
    print("== Iceberg export throughput ==")
    print(f"data             {size / MIB:.0f} MiB of segments, {report.records} records")
    print(f"ceiling          {ceiling_mib:6.1f} MiB/s, {ceiling_records:,.0f} records/s")
    print(
        f"export, Spark    {rate:6.1f} MiB/s, {records:,.0f} records/s, "
        f"{rate / ceiling_mib:.0%} of the ceiling (job {seconds:.2f} s; {verdict} the goal of "
        f"{GOAL:.0%})"
    )
    print(f"commit           {commit_s:.2f} s (pyiceberg add_files, SQL catalog on SQLite)")


if __name__ == "__main__":
    main()
