"""leader-epoch-checkpoint: Kafka's text format, its read errors and the upload slice."""

from __future__ import annotations

from pathlib import Path

import pytest

from tierflow.kafka.errors import CorruptCheckpointError
from tierflow.kafka.leader_epoch import (
    EpochEntry,
    entries_before,
    leader_epoch_checkpoint_bytes,
    read_leader_epoch_checkpoint,
    write_leader_epoch_checkpoint,
)

ENTRIES = [EpochEntry(0, 0), EpochEntry(2, 11), EpochEntry(5, 40)]


def checkpoint(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "leader-epoch-checkpoint"
    path.write_bytes(text.encode())
    return path


def test_round_trip_and_exact_text(tmp_path: Path) -> None:
    path = tmp_path / "leader-epoch-checkpoint"
    write_leader_epoch_checkpoint(path, ENTRIES)
    assert path.read_text() == "0\n3\n0 0\n2 11\n5 40\n"
    assert read_leader_epoch_checkpoint(path) == ENTRIES
    assert not (tmp_path / "leader-epoch-checkpoint.tmp").exists()
    assert leader_epoch_checkpoint_bytes([]) == b"0\n0\n"


@pytest.mark.parametrize("text", ["", "0\n", "0\n0\n"])
def test_empty_forms_read_as_no_entries(tmp_path: Path, text: str) -> None:
    assert read_leader_epoch_checkpoint(checkpoint(tmp_path, text)) == []


def test_any_whitespace_and_line_ending_is_accepted(tmp_path: Path) -> None:
    path = checkpoint(tmp_path, "0\r\n2\r\n0\t0\r\n2   11  \r\n")
    assert read_leader_epoch_checkpoint(path) == ENTRIES[:2]


@pytest.mark.parametrize(
    ("text", "line", "reason"),
    [
        ("1\n1\n0 0\n", 1, "unrecognized version 1"),
        ("zero\n1\n0 0\n", 1, "malformed version line"),
        ("0\nthree\n", 2, "malformed count line"),
        ("0\n3\n0 0\n2 11\n", 2, "expected 3 entries but found 2"),
        ("0\n1\n0 0\n2 11\n", 2, "expected 1 entries but found 2"),
        ("0\n2\n0 0\nepoch two\n", 4, "malformed entry"),
        ("0\n2\n0 0\n2 11 7\n", 4, "malformed entry"),
        ("0\n2\n 0 0\n2 11\n", 3, "malformed entry"),  # Java's split keeps a leading ""
        ("0\n2\n0 0\n\n2 11\n", 4, "malformed entry"),
        ("0\n1\n0 99999999999999999999\n", 3, "malformed entry"),
    ],
)
def test_unparseable_checkpoints_name_the_line(
    tmp_path: Path, text: str, line: int, reason: str
) -> None:
    path = checkpoint(tmp_path, text)
    with pytest.raises(CorruptCheckpointError, match=reason) as err:
        read_leader_epoch_checkpoint(path)
    assert err.value.line == line
    assert str(err.value).startswith(f"{path}: line {line}: ")


def test_entries_before_next_segment() -> None:
    assert entries_before(ENTRIES, 40) == ENTRIES[:2]
    assert entries_before(ENTRIES, 41) == ENTRIES
    assert entries_before(ENTRIES, 0) == []
