"""Shared helpers of the transform tests: segment files, key files, a counting object store."""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tierflow.demo.payloads import make_record
from tierflow.ids import new_kafka_uuid
from tierflow.kafka.batch_builder import build_batch
from tierflow.kafka.leader_epoch import EpochEntry, leader_epoch_checkpoint_bytes
from tierflow.kafka.offset_index import OffsetPosition, offset_index_bytes
from tierflow.kafka.records import CODEC_GZIP, CODEC_NONE
from tierflow.kafka.time_index import TimestampOffset, time_index_bytes
from tierflow.rsm import LogSegmentData, ObjectInfo, RemoteSegment
from tierflow.storage.object_store import READ_CHUNK, ObjectStore

BASE_OFFSET = 1000
NOW_MS = 1_790_000_000_000


def a_segment(start: int = BASE_OFFSET, end: int = BASE_OFFSET + 99) -> RemoteSegment:
    return RemoteSegment("orders", new_kafka_uuid(), 3, new_kafka_uuid(), start, end)


def record_batches(target_size: int, *, codec: int = CODEC_NONE, seed: int = 7) -> bytes:
    """Broker-shaped record batches of JSON orders, at least ``target_size`` bytes."""
    rng = random.Random(seed)
    out = bytearray()
    offset = BASE_OFFSET
    while len(out) < target_size:
        records = [make_record("orders", rng, NOW_MS + offset + i) for i in range(20)]
        out += build_batch(records, base_offset=offset, leader_epoch=5, compression=codec)
        offset += len(records)
    return bytes(out)


def segment_files(
    directory: Path,
    log_bytes: bytes,
    *,
    with_txn: bool,
    empty_snapshot: bool = False,
) -> LogSegmentData:
    """A segment's files with given log content and small but valid indexes."""
    directory.mkdir(parents=True, exist_ok=True)
    name = f"{BASE_OFFSET:020d}"
    files = {
        "log": log_bytes,
        "index": offset_index_bytes(
            BASE_OFFSET, [OffsetPosition(BASE_OFFSET + 20 * i, 4000 * i) for i in range(5)]
        ),
        "timeindex": time_index_bytes(
            BASE_OFFSET,
            [TimestampOffset(NOW_MS + 100 * i, BASE_OFFSET + 20 * i) for i in range(4)],
        ),
        "snapshot": b"" if empty_snapshot else bytes(range(256)) * 3,
        "txnindex": bytes(range(40, 80)),
    }
    paths = {}
    for suffix, content in files.items():
        path = directory / f"{name}.{suffix}"
        path.write_bytes(content)
        paths[suffix] = path
    return LogSegmentData(
        log_segment=paths["log"],
        offset_index=paths["index"],
        time_index=paths["timeindex"],
        transaction_index=paths["txnindex"] if with_txn else None,
        producer_snapshot_index=paths["snapshot"],
        leader_epoch_index=leader_epoch_checkpoint_bytes(
            [EpochEntry(3, 0), EpochEntry(4, BASE_OFFSET - 50), EpochEntry(5, BASE_OFFSET + 40)]
        ),
    )


@dataclass
class CountingObjectStore:
    """Passes every call to a real store and records the ranged reads and uploaded chunks."""

    inner: ObjectStore
    reads: list[tuple[str, int, int | None, int]] = field(default_factory=list)
    put_chunk_sizes: list[int] = field(default_factory=list)

    @property
    def bytes_read(self) -> int:
        return sum(n for *_rest, n in self.reads)

    def put_file(self, key: str, source: Path) -> ObjectInfo:
        return self.inner.put_file(key, source)

    def put_bytes(self, key: str, data: bytes) -> ObjectInfo:
        return self.inner.put_bytes(key, data)

    def put_chunks(self, key: str, chunks: Iterable[bytes]) -> ObjectInfo:
        def recorded() -> Iterator[bytes]:
            for chunk in chunks:
                self.put_chunk_sizes.append(len(chunk))
                yield chunk

        return self.inner.put_chunks(key, recorded())

    def read_range(self, key: str, start: int = 0, end: int | None = None) -> bytes:
        data = self.inner.read_range(key, start, end)
        self.reads.append((key, start, end, len(data)))
        return data

    def iter_chunks(self, key: str, chunk_size: int = READ_CHUNK) -> Iterator[bytes]:
        return self.inner.iter_chunks(key, chunk_size)

    def stat(self, key: str) -> ObjectInfo | None:
        return self.inner.stat(key)

    def delete(self, keys: Iterable[str]) -> None:
        self.inner.delete(keys)

    def list(self, prefix: str = "") -> Iterator[str]:
        return self.inner.list(prefix)

    def describe(self) -> str:
        return self.inner.describe()


__all__ = ["CODEC_GZIP", "CODEC_NONE"]
