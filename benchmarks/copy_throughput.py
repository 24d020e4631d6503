"""How fast tierflow reads segments and copies them to the local bucket.

Prints two figures on a generated log dir:
  * scan: batch headers read with every CRC checked (what copy does before any state is written)
  * copy: the whole segment copy of one partition (inspect, upload, verify, FINISHED)

Run: .venv/bin/python benchmarks/copy_throughput.py [--segment-mib 8] [--segments 8]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from tierflow.config import Settings
from tierflow.demo.broker import generate_log_dir
from tierflow.demo.topics import TopicSpec
from tierflow.lifecycle.copy.steps import copy_partition
from tierflow.runtime import open_storage, open_store, partition_logs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--segment-mib", type=int, default=8, help="segment.bytes in MiB")
    parser.add_argument("--segments", type=int, default=8, help="rolled segments to copy")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        settings = Settings.embedded(base)
        spec = TopicSpec(name="bench", partitions=1, segments=args.segments)
        started = time.perf_counter()
        generate_log_dir(settings.log_dirs[0], topics=(spec,), segment_bytes=args.segment_mib << 20)
        print(
            f"generated {args.segments} x {args.segment_mib} MiB in "
            f"{time.perf_counter() - started:.1f} s"
        )
        (log_,) = partition_logs(settings.log_dirs)
        segments = log_.segments()[:-1]
        size = sum(s.size_in_bytes() for s in segments)
        batches = 0
        started = time.perf_counter()
        for segment in segments:
            batches += sum(1 for _ in segment.batches(validate_crc=True))
        elapsed = time.perf_counter() - started
        print(f"scan: {size / elapsed / 2**20:8.1f} MiB/s  ({batches} batches, CRC checked)")

        store = open_store(settings)
        store.register_topic(
            "bench", log_.topic_id(), actor="bench", now_ms=0, remote_storage_enable=True
        )
        started = time.perf_counter()
        report = copy_partition(log_, store, open_storage(settings), owner="bench")
        elapsed = time.perf_counter() - started
        copied = sum(s.size_in_bytes for s in report.copied)
        print(
            f"copy: {copied / elapsed / 2**20:8.1f} MiB/s  ({len(report.copied)} segments, "
            f"{copied / 2**20:.0f} MiB, uploaded and verified)"
        )


if __name__ == "__main__":
    main()
