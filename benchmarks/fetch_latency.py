"""Bytes read and latency of fetching one record batch from the middle of a big remote segment.

Target (issue): fetching one record batch from the middle of a 1 GiB remote segment downloads
at most the chunks covering the batch, plus the manifest and indexes; with a warm manifest and
index cache it completes in under 10 ms median on the filesystem backend.

One ~1 GiB segment (plus a small active one, so that it is eligible) is tiered with
copy_partition on the chunked layout (zstd + AES-GCM, 4 MiB chunks). A cold fetch then runs on
a fresh storage manager and index cache, with every object-store read counted by object; warm
fetches reuse them at random offsets from the middle half of the segment.

Run: .venv/bin/python benchmarks/fetch_latency.py [--segment-mib 1024] [--fetches 200]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from big_segments import BuiltPartition, build_partition

from tierflow.cluster.leaders import leader_log
from tierflow.config import Settings
from tierflow.lifecycle.copy.steps import copy_partition
from tierflow.read.fetch import FetchRequest, FetchResult, fetch_remote
from tierflow.read.index_cache.memory import RemoteIndexCache
from tierflow.read.metadata_cache import RemoteLogMetadataCache
from tierflow.rsm import IndexType, RemoteSegment
from tierflow.runtime import open_storage, open_store
from tierflow.storage.chunked import INDEXES, LOG, MANIFEST, ChunkedRemoteStorageManager
from tierflow.storage.object_store import ObjectStore
from tierflow.transform.keyring import KeyRing

TOPIC = "bench"
MIB = 1 << 20


class CountingObjects:
    """Wraps the bucket to count ranged reads per object kind (log, indexes, manifest)."""

    def __init__(self, inner: ObjectStore) -> None:
        self.inner = inner
        self.bytes: Counter[str] = Counter()
        self.reads: Counter[str] = Counter()
        self.log_ranges: list[tuple[int, int]] = []

    def read_range(self, key: str, start: int = 0, end: int | None = None) -> bytes:
        data = self.inner.read_range(key, start, end)
        kind = key.rsplit(".", 1)[-1]
        self.bytes[kind] += len(data)
        self.reads[kind] += 1
        if kind == LOG:
            self.log_ranges.append((start, start + len(data)))
        return data

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)  # writes, stat, verify reads: not counted

    def reset(self) -> None:
        self.bytes.clear()
        self.reads.clear()
        self.log_ranges.clear()


@dataclass(frozen=True)
class Tiered:
    settings: Settings
    built: BuiltPartition
    segment: RemoteSegment
    copy_s: float


def tier_one_segment(base: Path, segment_bytes: int, chunk_size: int) -> Tiered:
    """Build one big segment plus a small active one, register the topic, copy it."""
    ring = KeyRing.generate(base / "keys", "bench")
    settings = Settings.embedded(
        base, storage_layout="chunked", compression=True, keyring=ring.path, chunk_size=chunk_size
    )
    built = build_partition(
        settings.log_dirs[0], topic=TOPIC, segment_bytes=segment_bytes, segments=1
    )
    os.sync()  # a rolled segment is on disk long before it is tiered
    store = open_store(settings)
    store.register_topic(
        TOPIC, built.topic_id, actor="bench", now_ms=_now_ms(), remote_storage_enable=True
    )
    log_ = leader_log(settings, TOPIC, built.partition).log
    started = time.perf_counter()
    report = copy_partition(log_, store, open_storage(settings), owner="bench")
    copy_s = time.perf_counter() - started
    if len(report.copied) != 1:
        raise RuntimeError(f"expected one copied segment, got {report}")
    copied = report.copied[0]
    segment = RemoteSegment(
        TOPIC,
        built.topic_id,
        built.partition,
        copied.segment_id,
        copied.start_offset,
        copied.end_offset,
    )
    return Tiered(settings, built, segment, copy_s)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def chunked_manager(settings: Settings) -> tuple[ChunkedRemoteStorageManager, CountingObjects]:
    """A fresh storage manager (cold manifest cache) whose bucket reads are counted."""
    rsm = open_storage(settings)
    if not isinstance(rsm, ChunkedRemoteStorageManager):
        raise TypeError("this benchmark needs the chunked layout")
    counting = CountingObjects(rsm.objects)
    rsm.objects = counting  # type: ignore[assignment]  # duck-typed: only reads are used
    return rsm, counting


@dataclass(frozen=True)
class ColdFetch:
    result: FetchResult
    elapsed_ms: float
    bytes_by_kind: dict[str, int]
    reads_by_kind: dict[str, int]
    log_ranges: list[tuple[int, int]]
    covering_chunks: int
    covering_stored_bytes: int
    offset_index_stored: int
    chunk_stored_mean: float


def cold_fetch(tiered: Tiered, offset: int, max_bytes: int) -> ColdFetch:
    rsm, counting = chunked_manager(tiered.settings)
    store = open_store(tiered.settings, migrate=False)
    started = time.perf_counter()
    result = fetch_remote(
        store,
        rsm,
        FetchRequest(TOPIC, tiered.built.partition, offset=offset, max_bytes=max_bytes),
        index_cache=RemoteIndexCache(),
    )
    elapsed_ms = (time.perf_counter() - started) * 1000
    by_kind = dict(counting.bytes)
    reads = dict(counting.reads)
    manifest = rsm.manifest(tiered.segment)  # cached now: reads nothing more
    position = result.found[0].header.position
    last_byte = position + len(result.batches[0]) - 1
    chunks = manifest.chunk_index.chunks_for_range(position, last_byte)
    offset_range = manifest.segment_indexes.range_for(IndexType.OFFSET)
    sizes = manifest.chunk_index.transformed_sizes()
    return ColdFetch(
        result,
        elapsed_ms,
        by_kind,
        reads,
        list(counting.log_ranges),
        len(chunks),
        sum(c.transformed_size for c in chunks),
        offset_range.size if offset_range else 0,
        sum(sizes) / len(sizes),
    )


def timed(fetch: Callable[[int], FetchResult], offsets: list[int]) -> list[float]:
    """Milliseconds per fetch; each must return at least one batch at or before its offset."""
    times = []
    for offset in offsets:
        started = time.perf_counter()
        result = fetch(offset)
        times.append((time.perf_counter() - started) * 1000)
        if not result.batches or not result.first_offset <= offset < result.next_offset:
            raise RuntimeError(f"fetch at {offset} returned {result.first_offset}..")
    return times


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--segment-mib", type=int, default=1024, help="remote segment size")
    parser.add_argument("--chunk-mib", type=int, default=4, help="chunk size in MiB")
    parser.add_argument("--fetches", type=int, default=200, help="warm fetches per series")
    parser.add_argument(
        "--max-bytes", type=int, default=1, help="fetch max_bytes (1: exactly one batch)"
    )
    parser.add_argument("--seed", type=int, default=5, help="seed of the random offsets")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="tierflow-bench-") as tmp:
        print(f"writing and tiering one {args.segment_mib} MiB segment ...", flush=True)
        tiered = tier_one_segment(Path(tmp), args.segment_mib * MIB, args.chunk_mib * MIB)
        segment = tiered.built.rolled[0]
        print(
            f"  copied {segment.size_in_bytes / MIB:.0f} MiB in {tiered.copy_s:.1f} s "
            "(inspect, rewrite, verify)",
            flush=True,
        )
        span = segment.next_offset - segment.base_offset
        middle = segment.base_offset + span // 2
        cold = cold_fetch(tiered, middle, args.max_bytes)

        print(f"warm fetches ({args.fetches} per series) ...", flush=True)
        rng = random.Random(args.seed)
        offsets = [
            segment.base_offset + rng.randrange(span // 4, 3 * span // 4)
            for _ in range(args.fetches)
        ]
        rsm, counting = chunked_manager(tiered.settings)
        store = open_store(tiered.settings, migrate=False)
        cache = RemoteIndexCache()
        part = tiered.built.partition
        metadata = RemoteLogMetadataCache.load(store, tiered.built.topic_id, part)

        def default_fetch(offset: int) -> FetchResult:
            return fetch_remote(
                store,
                rsm,
                FetchRequest(TOPIC, part, offset=offset, max_bytes=args.max_bytes),
                index_cache=cache,
            )

        def cached_fetch(offset: int) -> FetchResult:
            return fetch_remote(
                store,
                rsm,
                FetchRequest(TOPIC, part, offset=offset, max_bytes=args.max_bytes),
                index_cache=cache,
                metadata=metadata,
            )

        default_fetch(middle)  # warms the manifest and the offset index
        counting.reset()
        warm = timed(default_fetch, offsets)
        warm_bytes = sum(counting.bytes.values()) / len(offsets)
        warm_kinds = sorted(counting.bytes)
        cached = timed(cached_fetch, offsets)
        same = timed(cached_fetch, [middle] * args.fetches)

    print_summary(args, tiered, cold, warm, warm_bytes, warm_kinds, cached, same)


def print_summary(
    args: argparse.Namespace,
    tiered: Tiered,
    cold: ColdFetch,
    warm: list[float],
    warm_bytes: float,
    warm_kinds: list[str],
    cached: list[float],
    same: list[float],
) -> None:
    """The block the README quotes."""
    segment = tiered.built.rolled[0]
    batch = cold.result.batches[0]
    total = sum(cold.bytes_by_kind.values())

    def kind(name: str) -> str:
        return (
            f"{cold.bytes_by_kind.get(name, 0):>10,} B in {cold.reads_by_kind.get(name, 0)} read(s)"
        )

    def series(name: str, times: list[float]) -> str:
        return (
            f"{name:34s} median {statistics.median(times):6.2f} ms  "
            f"p95 {percentile(times, 0.95):6.2f} ms  max {max(times):6.2f} ms"
        )

    print()
    print("== fetch latency ==")
    print(
        f"segment   {segment.size_in_bytes / MIB:.0f} MiB, offsets {segment.base_offset}-"
        f"{segment.next_offset - 1}, {args.chunk_mib} MiB chunks (stored "
        f"{cold.chunk_stored_mean / MIB:.2f} MiB each on average), zstd-3 + AES-256-GCM"
    )
    print(
        f"cold      offset {cold.result.requested_offset}: 1 batch of {len(batch):,} B "
        f"(offsets {cold.result.first_offset}-{cold.result.next_offset - 1}) "
        f"in {cold.elapsed_ms:.1f} ms"
    )
    print(f"  manifest  {kind(MANIFEST)}")
    print(
        f"  indexes   {kind(INDEXES)}  (offset index only: {cold.offset_index_stored:,} B stored)"
    )
    print(
        f"  log       {kind(LOG)}  (chunks covering the batch: {cold.covering_chunks}, "
        f"{cold.covering_stored_bytes:,} B stored)"
    )
    ranges = ", ".join(f"[{a:,}, {b:,})" for a, b in cold.log_ranges)
    print(f"  log byte ranges read: {ranges}")
    print(
        f"  total     {total:>10,} B  (FetchResult.remote_bytes_read "
        f"{cold.result.remote_bytes_read:,} B)"
    )
    print(
        f"warm      {warm_bytes:,.0f} B read per fetch on average "
        f"({', '.join(warm_kinds) or 'nothing'})"
    )
    print(series("  random offsets, default call", warm))
    print(series("  random offsets, RLMM view reused", cached))
    print(series("  same offset, RLMM view reused", same))


if __name__ == "__main__":
    main()
