"""Ways to break a freshly generated tiered setup, one function per kind of damage.

Each local damage returns where it struck (the file, the byte or line, the segment it blocks),
so a case can demand that the error message names exactly that place.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass, field
from pathlib import Path

from tierflow.ids import new_kafka_uuid
from tierflow.kafka.log_dir import PartitionLog
from tierflow.kafka.offset_index import OffsetIndex, OffsetPosition, offset_index_bytes
from tierflow.kafka.record_batch import BatchHeader
from tierflow.kafka.segment import LogSegment
from tierflow.kafka.time_index import TimeIndex

LENGTH_FIELD = 8  # a batch starts with an int64 base offset, then its int32 length
V2_HEADER_SIZE = 61  # the records of a v2 batch follow its 61-byte header
TIME_ENTRY_SIZE = 12  # int64 timestamp, int32 relative offset


@dataclass(frozen=True)
class Struck:
    """Where a damage struck: ``blocked`` is the base offset of the first segment it blocks
    (None: the whole partition), ``names`` fill the case's message pattern."""

    blocked: int | None
    names: dict[str, object] = field(default_factory=dict)


def digest_tree(root: Path) -> dict[str, str]:
    """sha256 of every file under ``root``, by relative path."""
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def second_segment(log_: PartitionLog) -> LogSegment:
    """The segment the local damages hit: the one before it still copies, it must not."""
    return log_.segments()[1]


def middle_batch(segment: LogSegment) -> BatchHeader:
    batches = list(segment.batches(validate_crc=False))
    return batches[len(batches) // 2]


def _flip(path: Path, position: int, mask: int) -> None:
    data = bytearray(path.read_bytes())
    data[position] ^= mask
    path.write_bytes(bytes(data))


def truncate_mid_batch(log_: PartitionLog) -> Struck:
    segment = second_segment(log_)
    batch = middle_batch(segment)
    with open(segment.log_path, "r+b") as handle:
        handle.truncate(batch.position + batch.size_in_bytes // 2)
    return Struck(
        segment.base_offset,
        {"file": segment.log_path, "byte": batch.position, "offset": batch.base_offset},
    )


def truncate_at_last_indexed_batch(log_: PartitionLog) -> Struck:
    """Whole batches cut off at a batch boundary: no batch is torn, but the offset index still
    points at the first one that is gone. (A cut after the last index entry leaves nothing to
    notice: a gap before the next segment's base offset is legal after compaction.)"""
    segment = second_segment(log_)
    index = OffsetIndex.read(segment.index_path, segment.base_offset)
    cut = index.entries[-1].position
    with open(segment.log_path, "r+b") as handle:
        handle.truncate(cut)
    entry_position = 8 * (len(index.entries) - 1)
    return Struck(
        segment.base_offset, {"file": segment.index_path, "byte": entry_position, "position": cut}
    )


def flip_payload_bit(log_: PartitionLog) -> Struck:
    segment = second_segment(log_)
    batch = middle_batch(segment)
    _flip(segment.log_path, batch.position + V2_HEADER_SIZE + 3, 0x10)
    return Struck(
        segment.base_offset,
        {"file": segment.log_path, "byte": batch.position, "offset": batch.base_offset},
    )


def flip_length_high_bit(log_: PartitionLog) -> Struck:
    """The batch now claims about a gigabyte more than the file holds."""
    segment = second_segment(log_)
    batch = middle_batch(segment)
    _flip(segment.log_path, batch.position + LENGTH_FIELD, 0x40)
    return Struck(
        segment.base_offset,
        {"file": segment.log_path, "byte": batch.position, "offset": batch.base_offset},
    )


def flip_length_low_bit(log_: PartitionLog) -> Struck:
    """The batch is now one byte longer or shorter: its CRC covers the wrong bytes."""
    segment = second_segment(log_)
    batch = middle_batch(segment)
    _flip(segment.log_path, batch.position + LENGTH_FIELD + 3, 0x01)
    return Struck(
        segment.base_offset,
        {"file": segment.log_path, "byte": batch.position, "offset": batch.base_offset},
    )


def index_past_end(log_: PartitionLog) -> Struck:
    segment = second_segment(log_)
    index = OffsetIndex.read(segment.index_path, segment.base_offset)
    last = index.entries[-1]
    beyond = segment.size_in_bytes() + 100
    entries = [*index.entries[:-1], OffsetPosition(last.offset, beyond)]
    segment.index_path.write_bytes(offset_index_bytes(segment.base_offset, entries))
    entry_position = 8 * (len(entries) - 1)
    return Struck(
        segment.base_offset,
        {"file": segment.index_path, "byte": entry_position, "position": beyond},
    )


def time_index_out_of_order(log_: PartitionLog) -> Struck:
    """The second entry's timestamp goes back before the first's (written raw: the library's
    writer refuses to)."""
    segment = second_segment(log_)
    index = TimeIndex.read(segment.time_index_path, segment.base_offset)
    data = bytearray(segment.time_index_path.read_bytes())
    struct.pack_into(">q", data, TIME_ENTRY_SIZE, index.entries[0].timestamp - 1)
    segment.time_index_path.write_bytes(bytes(data))
    return Struck(segment.base_offset, {"file": segment.time_index_path, "byte": TIME_ENTRY_SIZE})


def remove_offset_index(log_: PartitionLog) -> Struck:
    segment = second_segment(log_)
    segment.index_path.unlink()
    return Struck(segment.base_offset, {"file": segment.index_path})


def remove_next_snapshot(log_: PartitionLog) -> Struck:
    """KIP-405 uploads the producer snapshot at the next segment's base offset."""
    segment = second_segment(log_)
    snapshot = log_.producer_snapshot_path(log_.segments()[2].base_offset)
    snapshot.unlink()
    return Struck(segment.base_offset, {"file": snapshot})


def _rewrite_epoch_checkpoint(log_: PartitionLog, text: str) -> Path:
    path = log_.path / "leader-epoch-checkpoint"
    path.write_text(text)
    return path


def epoch_checkpoint_bad_version(log_: PartitionLog) -> Struck:
    lines = (log_.path / "leader-epoch-checkpoint").read_text().splitlines()
    path = _rewrite_epoch_checkpoint(log_, "\n".join(["1", *lines[1:]]) + "\n")
    return Struck(None, {"file": path})


def epoch_checkpoint_wrong_count(log_: PartitionLog) -> Struck:
    lines = (log_.path / "leader-epoch-checkpoint").read_text().splitlines()
    count = int(lines[1]) + 2
    path = _rewrite_epoch_checkpoint(log_, "\n".join([lines[0], str(count), *lines[2:]]) + "\n")
    return Struck(None, {"file": path, "count": count})


def epoch_checkpoint_not_numeric(log_: PartitionLog) -> Struck:
    lines = (log_.path / "leader-epoch-checkpoint").read_text().splitlines()
    lines[2] = "x " + lines[2].split()[1]
    path = _rewrite_epoch_checkpoint(log_, "\n".join(lines) + "\n")
    return Struck(None, {"file": path})


def foreign_topic_id(log_: PartitionLog) -> Struck:
    path = log_.path / "partition.metadata"
    registered, foreign = log_.topic_id(), new_kafka_uuid()
    path.write_text(f"version: 0\ntopic_id: {foreign}\n")
    return Struck(None, {"file": path, "foreign": foreign, "registered": registered})
