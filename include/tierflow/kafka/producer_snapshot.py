"""``<offset>.snapshot``: the producer-state snapshot (idempotence/transaction state).

A broker that rebuilds a partition from tiered storage needs it to keep deduplicating producers,
so KIP-405 makes it a mandatory part of every uploaded segment.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import astuple, dataclass
from pathlib import Path

from crc32c import crc32c

from tierflow.kafka._fs import read_file_bytes, write_atomically
from tierflow.kafka.errors import CorruptSnapshotError

VERSION = 1
_HEADER = struct.Struct(">hIi")  # version, crc (CRC-32C of everything after it), entry count
_CRC_START = 6
_ENTRY = struct.Struct(">qhiqiqiq")


@dataclass(frozen=True)
class ProducerSnapshotEntry:
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int  # -1 when no transaction is open


def read_producer_snapshot(path: str | Path) -> list[ProducerSnapshotEntry]:
    """Entries of a version-1 snapshot file, CRC-checked like Kafka's readSnapshot."""
    return producer_snapshot_entries(read_file_bytes(path), path)


def producer_snapshot_entries(data: bytes, path: str | Path) -> list[ProducerSnapshotEntry]:
    """The same checks on a snapshot's bytes (one fetched from remote storage); ``path``
    names them in errors."""
    if len(data) < _HEADER.size:
        raise CorruptSnapshotError(path, 0, f"{len(data)} bytes is shorter than the header")
    version, crc, count = _HEADER.unpack_from(data)
    if version != VERSION:
        raise CorruptSnapshotError(path, 0, f"unsupported snapshot version {version}")
    computed = crc32c(memoryview(data)[_CRC_START:])
    if crc != computed:
        raise CorruptSnapshotError(
            path, 2, f"crc mismatch: stored {crc:#010x}, computed {computed:#010x}"
        )
    expected = _HEADER.size + count * _ENTRY.size
    if count < 0 or len(data) != expected:
        raise CorruptSnapshotError(
            path, 6, f"entry count {count} needs {expected} bytes but the file has {len(data)}"
        )
    return [
        ProducerSnapshotEntry(*_ENTRY.unpack_from(data, _HEADER.size + i * _ENTRY.size))
        for i in range(count)
    ]


def producer_snapshot_bytes(entries: Iterable[ProducerSnapshotEntry]) -> bytes:
    items = list(entries)
    body = struct.pack(">i", len(items)) + b"".join(_ENTRY.pack(*astuple(e)) for e in items)
    return struct.pack(">hI", VERSION, crc32c(body)) + body


def write_producer_snapshot(path: str | Path, entries: Iterable[ProducerSnapshotEntry]) -> None:
    write_atomically(path, producer_snapshot_bytes(entries))
