"""partition.metadata: byte-exact writing and Kafka's read checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from tierflow.ids import ZERO_UUID, new_kafka_uuid
from tierflow.kafka.errors import CorruptCheckpointError
from tierflow.kafka.partition_metadata import read_partition_metadata, write_partition_metadata


def test_round_trip_and_exact_bytes(tmp_path: Path) -> None:
    topic_id = new_kafka_uuid()
    path = tmp_path / "partition.metadata"
    write_partition_metadata(path, topic_id)
    # Kafka writes no final newline (checked against real 3.0 log dirs).
    assert path.read_bytes() == f"version: 0\ntopic_id: {topic_id}".encode()
    assert read_partition_metadata(path) == topic_id


@pytest.mark.parametrize(
    ("text", "line", "reason"),
    [
        ("", 1, "empty"),
        ("version: 1\ntopic_id: 2P63MtzYTASmr9ZbB4Mf_Q", 1, "unrecognized version 1"),
        ("version 0 x\ntopic_id: 2P63MtzYTASmr9ZbB4Mf_Q", 1, "malformed"),
        ("version: 0\n", 2, "missing topic_id"),
        ("version: 0\ntopic_id: not-a-uuid", 2, "malformed"),
        (f"version: 0\ntopic_id: {ZERO_UUID}", 2, "zero id"),
    ],
)
def test_bad_files(tmp_path: Path, text: str, line: int, reason: str) -> None:
    path = tmp_path / "partition.metadata"
    path.write_text(text)
    with pytest.raises(CorruptCheckpointError, match=reason) as err:
        read_partition_metadata(path)
    assert err.value.line == line


def test_writer_rejects_a_bad_id(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        write_partition_metadata(tmp_path / "partition.metadata", "nope")
