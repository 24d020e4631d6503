"""``leader-epoch-checkpoint``: which leader epoch started at which offset.

Followers truncate by it after a leader change, and KIP-405 uploads the part of it that covers
each segment so a broker can rebuild the epoch history from remote storage.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from tierflow.kafka._fs import write_atomically
from tierflow.kafka.checkpoint import checkpoint_bytes, parse_int, read_checkpoint, split_fields

LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
VERSION = 0


@dataclass(frozen=True, order=True)
class EpochEntry:
    epoch: int
    start_offset: int


def _entry(line: str) -> EpochEntry:
    epoch, start = split_fields(line, 2)
    return EpochEntry(parse_int(epoch, 32), parse_int(start))


def read_leader_epoch_checkpoint(path: str | Path) -> list[EpochEntry]:
    """Entries in file order; bad version, count or line -> CorruptCheckpointError (line N)."""
    return read_checkpoint(path, VERSION, _entry)


def leader_epoch_checkpoint_bytes(entries: Iterable[EpochEntry]) -> bytes:
    """Kafka's text form; also the LEADER_EPOCH index uploaded with a segment."""
    return checkpoint_bytes(VERSION, (f"{e.epoch} {e.start_offset}" for e in entries))


def write_leader_epoch_checkpoint(path: str | Path, entries: Iterable[EpochEntry]) -> None:
    write_atomically(path, leader_epoch_checkpoint_bytes(entries))


def entries_before(entries: Iterable[EpochEntry], next_segment_base: int) -> list[EpochEntry]:
    """The entries Kafka uploads with a segment: those starting before the next segment."""
    return [e for e in entries if e.start_offset < next_segment_base]
