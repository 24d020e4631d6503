"""Producer-state snapshots: byte layout, CRC, version and length checks."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from kafka.record.util import calc_crc32c

from tests.unit.kafka.log_builders import write
from tierflow.kafka.errors import CorruptSnapshotError, MissingFileError
from tierflow.kafka.producer_snapshot import (
    ProducerSnapshotEntry,
    producer_snapshot_bytes,
    read_producer_snapshot,
    write_producer_snapshot,
)

ENTRIES = [
    ProducerSnapshotEntry(4001, 0, 11, 11, 2, 1_670_068_129_797, -1, -1),
    ProducerSnapshotEntry(4002, 3, 20, 90, 4, 1_670_068_739_452, 5, 85),
]


def test_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000100.snapshot"
    write_producer_snapshot(path, ENTRIES)
    assert len(path.read_bytes()) == 10 + 46 * 2
    assert read_producer_snapshot(path) == ENTRIES


def test_empty_snapshot_is_byte_identical_to_kafkas() -> None:
    # What every broker writes for a partition without producer state (seen in real log dirs).
    assert producer_snapshot_bytes([]) == bytes.fromhex("000148674bc700000000")


def test_bad_crc(tmp_path: Path) -> None:
    data = bytearray(producer_snapshot_bytes(ENTRIES))
    data[30] ^= 0x04
    with pytest.raises(CorruptSnapshotError, match="crc mismatch") as err:
        read_producer_snapshot(write(tmp_path / "x.snapshot", bytes(data)))
    assert err.value.position == 2


def test_bad_version(tmp_path: Path) -> None:
    data = bytearray(producer_snapshot_bytes(ENTRIES))
    struct.pack_into(">h", data, 0, 2)
    with pytest.raises(CorruptSnapshotError, match="version 2"):
        read_producer_snapshot(write(tmp_path / "x.snapshot", bytes(data)))


def test_wrong_length(tmp_path: Path) -> None:
    # Count says 3 but only 2 entries follow; the CRC is resealed so only the length is wrong.
    body = struct.pack(">i", 3) + producer_snapshot_bytes(ENTRIES)[10:]
    data = struct.pack(">hI", 1, calc_crc32c(body)) + body
    with pytest.raises(CorruptSnapshotError, match="entry count 3"):
        read_producer_snapshot(write(tmp_path / "x.snapshot", data))
    with pytest.raises(CorruptSnapshotError, match="shorter than the header"):
        read_producer_snapshot(write(tmp_path / "y.snapshot", b"\x00\x01"))


def test_missing_snapshot(tmp_path: Path) -> None:
    with pytest.raises(MissingFileError) as err:
        read_producer_snapshot(tmp_path / "00000000000000000007.snapshot")
    assert isinstance(err.value, FileNotFoundError)
