"""Broker-shaped partition directories with large segments, written at disk speed.

``tierflow.demo`` encodes every record (about 4.5 MiB/s), far too slow for GiB-sized logs.
Here a few hundred uncompressed JSON batches are encoded once with ``build_batch`` and then
repeated with only their base offset patched: base offset and leader epoch sit before the
CRC-covered bytes, so every batch still passes a CRC check. The repeated cycle (about 4 MiB)
is longer than zstd's level-3 window, so chunks compress like fresh producer data, not like a
repeated pattern. Indexes, producer snapshots and checkpoints are written the way a broker
writes them, so that tierflow's copy accepts the directory.

Run on its own to time it: .venv/bin/python benchmarks/big_segments.py [--gib 1]
"""

from __future__ import annotations

import argparse
import random
import struct
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from tierflow.demo.payloads import make_record
from tierflow.ids import new_kafka_uuid
from tierflow.kafka.batch_builder import Record, build_batch
from tierflow.kafka.checkpoint import (
    REPLICATION_OFFSET_CHECKPOINT,
    read_offset_checkpoint,
    write_offset_checkpoint,
)
from tierflow.kafka.leader_epoch import (
    LEADER_EPOCH_CHECKPOINT,
    EpochEntry,
    write_leader_epoch_checkpoint,
)
from tierflow.kafka.naming import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SNAPSHOT_SUFFIX,
    TIME_INDEX_SUFFIX,
    offset_prefix,
)
from tierflow.kafka.offset_index import OffsetPosition, write_offset_index
from tierflow.kafka.partition_metadata import PARTITION_METADATA, write_partition_metadata
from tierflow.kafka.producer_snapshot import write_producer_snapshot
from tierflow.kafka.records import CODEC_NONE
from tierflow.kafka.time_index import TimestampOffset, write_time_index

TEMPLATE_BATCHES = 300
RECORDS_PER_BATCH = 50  # JSON records of ~300 bytes: about a producer's 16 KiB batch.size
INDEX_INTERVAL_BYTES = 4096  # Kafka's log.index.interval.bytes default
LEADER_EPOCH = 0
PAYLOAD_KINDS = ("orders", "clickstream", "payments")  # tierflow.demo's record generators
_BASE_OFFSET = struct.Struct(">q")
_BATCH_LENGTH = struct.Struct(">i")
_BATCH_LENGTH_AT = 8
_LOG_OVERHEAD = 12  # base offset + length, before the length-counted part of a batch
_RECORD_SPACING_MS = 5


@dataclass(frozen=True)
class BatchTemplates:
    """One cycle of batches back to back; offsets are relative to the cycle's first offset."""

    data: bytearray
    positions: tuple[int, ...]
    sizes: tuple[int, ...]
    first_offsets: tuple[int, ...]  # of each batch, relative to the cycle start
    record_counts: tuple[int, ...]
    max_timestamps: tuple[int, ...]

    @property
    def offsets_per_cycle(self) -> int:
        return self.first_offsets[-1] + self.record_counts[-1]

    def __len__(self) -> int:
        return len(self.sizes)


# The active segment a built partition ends with, unless asked for another size.
SMALL_ACTIVE_BYTES = 256 * 1024


def build_templates(
    *,
    batches: int = TEMPLATE_BATCHES,
    records_per_batch: int = RECORDS_PER_BATCH,
    seed: int = 11,
    start_ms: int | None = None,
    noise_bytes: int = 0,
    make: Callable[[random.Random, int], Record] | None = None,
) -> BatchTemplates:
    """Encode the cycle once: the only slow part, so it is kept to a few MiB. ``noise_bytes``
    random bytes after each JSON value make records compress less (100 after ~300 bytes of
    JSON: about 2.5x with zstd, against about 5x without). ``make`` (rng, timestamp) makes
    every record instead of tierflow.demo's generators (a changelog's keys, say)."""
    rng = random.Random(seed)
    start = int(time.time() * 1000) - 3_600_000 if start_ms is None else start_ms
    data = bytearray()
    positions, sizes, firsts, counts, max_ts = [], [], [], [], []
    next_offset = 0
    timestamp = start
    for number in range(batches):
        kind = PAYLOAD_KINDS[number % len(PAYLOAD_KINDS)]
        records = []
        for _ in range(records_per_batch):
            record = make(rng, timestamp) if make else make_record(kind, rng, timestamp)
            if noise_bytes:
                record = replace(record, value=(record.value or b"") + rng.randbytes(noise_bytes))
            records.append(record)
            timestamp += _RECORD_SPACING_MS
        batch = build_batch(
            records, base_offset=next_offset, leader_epoch=LEADER_EPOCH, compression=CODEC_NONE
        )
        (length,) = _BATCH_LENGTH.unpack_from(batch, _BATCH_LENGTH_AT)
        if length + _LOG_OVERHEAD != len(batch):
            raise ValueError(f"batch {number}: length field {length} disagrees with its bytes")
        positions.append(len(data))
        sizes.append(len(batch))
        firsts.append(next_offset)
        counts.append(len(records))
        max_ts.append(records[-1].timestamp)
        data += batch
        next_offset += len(records)
    return BatchTemplates(
        data, tuple(positions), tuple(sizes), tuple(firsts), tuple(counts), tuple(max_ts)
    )


@dataclass(frozen=True)
class BuiltSegment:
    """One segment on disk; ``next_offset`` is the next segment's base offset."""

    directory: Path
    base_offset: int
    next_offset: int
    size_in_bytes: int
    batches: int

    def path(self, suffix: str) -> Path:
        return self.directory / (offset_prefix(self.base_offset) + suffix)

    @property
    def log_path(self) -> Path:
        return self.path(LOG_SUFFIX)

    @property
    def offset_index_path(self) -> Path:
        return self.path(INDEX_SUFFIX)

    @property
    def time_index_path(self) -> Path:
        return self.path(TIME_INDEX_SUFFIX)

    @property
    def snapshot_path(self) -> Path:
        """The producer snapshot a copy uploads with this segment: at the next base offset."""
        return self.directory / (offset_prefix(self.next_offset) + SNAPSHOT_SUFFIX)


@dataclass(frozen=True)
class BuiltPartition:
    directory: Path
    topic: str
    partition: int
    topic_id: str
    segments: tuple[BuiltSegment, ...]  # ascending; the last one is the active segment
    leader_epochs: tuple[EpochEntry, ...]

    @property
    def rolled(self) -> tuple[BuiltSegment, ...]:
        """The segments a copy may tier (the active one never is)."""
        return self.segments[:-1]

    @property
    def log_end_offset(self) -> int:
        return self.segments[-1].next_offset


@dataclass
class _IndexState:
    """Kafka's LogSegment.append bookkeeping for the offset and time indexes."""

    offsets: list[OffsetPosition] = field(default_factory=list)
    times: list[TimestampOffset] = field(default_factory=list)
    bytes_since_entry: int = 0
    max_timestamp: int = -1
    offset_of_max_timestamp: int = -1

    def append(self, position: int, size: int, last_offset: int, max_timestamp: int) -> None:
        if max_timestamp > self.max_timestamp:
            self.max_timestamp = max_timestamp
            self.offset_of_max_timestamp = last_offset
        if self.bytes_since_entry > INDEX_INTERVAL_BYTES:
            self.offsets.append(OffsetPosition(last_offset, position))
            self.maybe_append_time_entry()
            self.bytes_since_entry = 0
        self.bytes_since_entry += size

    def maybe_append_time_entry(self) -> None:
        """TimeIndex.maybeAppend: only a strictly larger timestamp makes an entry."""
        if self.max_timestamp < 0:
            return
        if self.times and self.max_timestamp <= self.times[-1].timestamp:
            return
        self.times.append(TimestampOffset(self.max_timestamp, self.offset_of_max_timestamp))


def write_segment(
    directory: Path, templates: BatchTemplates, base_offset: int, target_bytes: int
) -> BuiltSegment:
    """Append template batches until the next one would pass ``target_bytes`` (Kafka's roll
    rule), patching base offsets in place and writing each run of batches with one call."""
    data = memoryview(templates.data)
    state = _IndexState()
    position = batches = 0
    offset = next_offset = base_offset  # cycle start; offset after the last batch written
    log_path = directory / (offset_prefix(base_offset) + LOG_SUFFIX)
    with open(log_path, "wb") as out:
        done = False
        while not done:
            run_end = 0
            for i, size in enumerate(templates.sizes):
                if position > 0 and position + size > target_bytes:
                    done = True
                    break
                batch_offset = offset + templates.first_offsets[i]
                _BASE_OFFSET.pack_into(templates.data, templates.positions[i], batch_offset)
                next_offset = batch_offset + templates.record_counts[i]
                state.append(position, size, next_offset - 1, templates.max_timestamps[i])
                position += size
                batches += 1
                run_end = i + 1
            if run_end:
                end = templates.positions[run_end - 1] + templates.sizes[run_end - 1]
                out.write(data[:end])
            if not done:
                offset += templates.offsets_per_cycle
    state.maybe_append_time_entry()  # what a roll adds
    segment = BuiltSegment(directory, base_offset, next_offset, position, batches)
    write_offset_index(segment.offset_index_path, base_offset, state.offsets)
    write_time_index(segment.time_index_path, base_offset, state.times)
    return segment


def build_partition(
    log_dir: Path,
    *,
    topic: str,
    partition: int = 0,
    segment_bytes: int,
    segments: int,
    active_bytes: int = SMALL_ACTIVE_BYTES,
    templates: BatchTemplates | None = None,
    topic_id: str | None = None,
) -> BuiltPartition:
    """``segments`` rolled segments of about ``segment_bytes`` plus a small active segment,
    with everything a broker leaves beside them (high watermark = log end offset)."""
    if segments < 1 or segment_bytes <= 0:
        raise ValueError("need at least one rolled segment of a positive size")
    templates = build_templates() if templates is None else templates
    directory = Path(log_dir) / f"{topic}-{partition}"
    directory.mkdir(parents=True, exist_ok=False)
    topic_id = topic_id or new_kafka_uuid()  # another partition's, for a topic of several
    built: list[BuiltSegment] = []
    base = 0
    for number in range(segments + 1):
        size = active_bytes if number == segments else segment_bytes
        segment = write_segment(directory, templates, base, size)
        if number < segments:
            write_producer_snapshot(segment.snapshot_path, [])  # non-idempotent producers only
        built.append(segment)
        base = segment.next_offset
    epochs = (EpochEntry(LEADER_EPOCH, 0),)
    write_leader_epoch_checkpoint(directory / LEADER_EPOCH_CHECKPOINT, epochs)
    write_partition_metadata(directory / PARTITION_METADATA, topic_id)
    _set_high_watermark(Path(log_dir), topic, partition, base)
    return BuiltPartition(directory, topic, partition, topic_id, tuple(built), epochs)


def _set_high_watermark(log_dir: Path, topic: str, partition: int, offset: int) -> None:
    """Keep other partitions' entries: several partitions may share one log dir."""
    path = log_dir / REPLICATION_OFFSET_CHECKPOINT
    offsets = read_offset_checkpoint(path) if path.is_file() else {}
    offsets[(topic, partition)] = offset
    write_offset_checkpoint(path, offsets)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=1.0, help="rolled data to write, in GiB")
    parser.add_argument("--segment-mib", type=int, default=128, help="segment size in MiB")
    args = parser.parse_args()
    segment_bytes = args.segment_mib << 20
    count = max(1, round(args.gib * 1024 / args.segment_mib))
    with tempfile.TemporaryDirectory(prefix="tierflow-bench-") as tmp:
        started = time.perf_counter()
        templates = build_templates()
        encoded = time.perf_counter() - started
        built = build_partition(
            Path(tmp),
            topic="bench",
            segment_bytes=segment_bytes,
            segments=count,
            templates=templates,
        )
        elapsed = time.perf_counter() - started
        size = sum(s.size_in_bytes for s in built.rolled)
        print(
            f"templates: {len(templates)} batches, {len(templates.data) / 2**20:.1f} MiB, "
            f"{templates.offsets_per_cycle} records, encoded in {encoded:.2f} s"
        )
        print(
            f"wrote {len(built.rolled)} x {args.segment_mib} MiB segments "
            f"({size / 2**30:.2f} GiB, {built.log_end_offset} offsets) in {elapsed:.1f} s: "
            f"{size / elapsed / 2**20:.0f} MiB/s"
        )


if __name__ == "__main__":
    main()
