"""How fast the scrubber checks a bucket, against the read-and-decrypt ceiling measured in the
same run.

Data: ``--gib`` GiB of broker-shaped segments (big_segments' templates) in ``--partitions``
partitions, tiered by tierflow's copy into the chunked layout (4 MiB chunks, zstd + AES-256-GCM,
tiered_topic.py), on a local bucket.

1. The ceiling: every finished segment read back once through the storage manager, its log
   decoded chunk by chunk (read, decrypt, decompress) and each index fetched: the least a check
   of the content can do, on one core.
2. The scrub: ``tierflow scrub``'s library run over the same segments with a budget that covers
   them all, on one core: each object's sha256 against the upload's, the manifest, every index
   decoded and parsed, the log decoded.

Both count the objects' stored bytes, so the ratio is the scrub's cost over the bare read. Each
is timed ``--rounds`` times, alternating, each with a fresh storage manager (no warm cache).

Run: .venv/bin/python benchmarks/scrub.py [--gib 0.5] [--partitions 2] [--rounds 2]
"""

from __future__ import annotations

import argparse
import itertools
import os
import tempfile
import time
from pathlib import Path

from tiered_topic import MIB, tiered_arguments, tiered_settings, tiered_topic

from tierflow.config import Settings
from tierflow.lifecycle.scrub.run import ScrubRun, scrub
from tierflow.metadata.store import MetadataStore
from tierflow.rsm import IndexType
from tierflow.runtime import open_storage
from tierflow.segment_refs import remote_segment

TOPIC = "bench"


def arguments() -> argparse.Namespace:
    parser = tiered_arguments(
        __doc__.splitlines()[0], "tiered data to check", gib=0.5, cores="cores the copy uses"
    )
    parser.add_argument("--rounds", type=int, default=2)
    return parser.parse_args()


def stored_bytes(store: MetadataStore) -> int:
    rows = store.scrub_queue(limit=1_000_000)
    return sum(o.size for row in rows for o in store.segment_objects(row.segment_id))


def read_and_decrypt(settings: Settings, store: MetadataStore) -> float:
    """Seconds to decode every finished segment's log and fetch its indexes, once."""
    rsm = open_storage(settings)
    started = time.perf_counter()
    for row in store.scrub_queue(limit=1_000_000):
        segment = remote_segment(store.topic_by_id(row.topic_id), row)
        for _ in rsm.iter_log_segment(segment):
            pass
        for index_type in IndexType:
            if index_type is not IndexType.TRANSACTION or not row.txn_index_empty:
                rsm.fetch_index(segment, index_type)
    return time.perf_counter() - started


def scrubbed(settings: Settings, store: MetadataStore, clock: itertools.count) -> float:
    """Seconds of one scrub run over every finished segment; it must find nothing."""
    run = ScrubRun(1 << 50, actor="bench", clock_ms=lambda: next(clock))
    started = time.perf_counter()
    report = scrub(store, open_storage(settings), run)
    seconds = time.perf_counter() - started
    if report.findings:
        raise RuntimeError(f"the scrub found {len(report.findings)} damaged segments")
    return seconds


def main() -> None:
    args = arguments()
    print(f"load avg before {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(prefix="tierflow-bench-") as tmp:
        settings = tiered_settings(Path(tmp))
        store = tiered_topic(settings, TOPIC, args)[1]
        size = stored_bytes(store) / MIB
        logs = sum(r.segment_size_bytes for r in store.scrub_queue(limit=1_000_000)) / MIB
        clock, rows = itertools.count(1), []
        for n in range(args.rounds):
            print(f"round {n + 1}: ceiling, then scrub ...", flush=True)
            rows.append((read_and_decrypt(settings, store), scrubbed(settings, store, clock)))
    print()
    print("== Scrub throughput (one core) ==")
    print(f"data       {size:.0f} MiB of stored objects, {logs:.0f} MiB of segments decoded")
    for ceiling_s, scrub_s in rows:
        ceiling, rate = size / ceiling_s, size / scrub_s
        print(
            f"ceiling {ceiling:6.1f} MiB/s, scrub {rate:6.1f} MiB/s of stored bytes "
            f"({logs / scrub_s:.0f} MiB/s of segments): {rate / ceiling:.0%} of the ceiling "
            f"({scrub_s:.2f} s against {ceiling_s:.2f} s)"
        )


if __name__ == "__main__":
    main()
