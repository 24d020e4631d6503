"""The broker-wide offset checkpoints (high watermark, recovery point, log start)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tierflow.kafka.checkpoint import (
    REPLICATION_OFFSET_CHECKPOINT,
    read_offset_checkpoint,
    write_offset_checkpoint,
)
from tierflow.kafka.errors import CorruptCheckpointError, MissingFileError

OFFSETS = {("orders", 0): 42, ("orders", 1): 0, ("__consumer_offsets", 13): 3093}


def test_round_trip_and_exact_text(tmp_path: Path) -> None:
    path = tmp_path / REPLICATION_OFFSET_CHECKPOINT
    write_offset_checkpoint(path, OFFSETS)
    assert path.read_text().splitlines()[:3] == ["0", "3", "orders 0 42"]
    assert read_offset_checkpoint(path) == OFFSETS


def test_empty_file_is_no_entries(tmp_path: Path) -> None:
    # Brokers leave a 0-byte cleaner-offset-checkpoint behind; Kafka reads it as empty.
    path = tmp_path / "cleaner-offset-checkpoint"
    path.write_bytes(b"")
    assert read_offset_checkpoint(path) == {}


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("1\n0\n", 1),
        ("0\n2\norders 0 42\n", 2),
        ("0\n1\norders zero 42\n", 3),
        ("0\n1\norders 0\n", 3),
        ("0\n1\norders 0 4 2\n", 3),
    ],
)
def test_malformed_offset_checkpoints(tmp_path: Path, text: str, line: int) -> None:
    path = tmp_path / REPLICATION_OFFSET_CHECKPOINT
    path.write_text(text)
    with pytest.raises(CorruptCheckpointError) as err:
        read_offset_checkpoint(path)
    assert err.value.line == line


def test_not_utf8_names_the_byte(tmp_path: Path) -> None:
    path = tmp_path / REPLICATION_OFFSET_CHECKPOINT
    path.write_bytes(b"0\n1\norders\xff 0 1\n")
    with pytest.raises(CorruptCheckpointError) as err:
        read_offset_checkpoint(path)
    assert err.value.position == 10


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(MissingFileError):
        read_offset_checkpoint(tmp_path / REPLICATION_OFFSET_CHECKPOINT)
