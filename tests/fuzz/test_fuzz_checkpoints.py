"""Properties of the text checkpoints, partition.metadata, producer snapshots and file names."""

from __future__ import annotations

import uuid

from hypothesis import example, given
from hypothesis import strategies as st

from tests.fuzz.support import assert_names_file, counted, scratch_file, valid_or_mutated
from tierflow.ids import ZERO_UUID, from_kafka_uuid, to_kafka_uuid
from tierflow.kafka.checkpoint import checkpoint_bytes, read_offset_checkpoint
from tierflow.kafka.errors import CorruptCheckpointError, CorruptSnapshotError
from tierflow.kafka.leader_epoch import (
    EpochEntry,
    leader_epoch_checkpoint_bytes,
    read_leader_epoch_checkpoint,
)
from tierflow.kafka.naming import (
    offset_prefix,
    parse_offset_prefix,
    parse_partition_dir,
)
from tierflow.kafka.partition_metadata import partition_metadata_bytes, read_partition_metadata
from tierflow.kafka.producer_snapshot import (
    ProducerSnapshotEntry,
    producer_snapshot_bytes,
    read_producer_snapshot,
)

INT16 = st.integers(-(2**15), 2**15 - 1)
INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
TOPIC_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"
topics = st.text(TOPIC_CHARS, min_size=1, max_size=30).filter(lambda t: t not in (".", ".."))
epoch_entries = st.builds(EpochEntry, epoch=INT32, start_offset=INT64)
offset_maps = st.dictionaries(st.tuples(topics, INT32), INT64, max_size=6)
topic_ids = st.uuids().map(to_kafka_uuid).filter(lambda t: t != ZERO_UUID)
snapshot_entries = st.builds(
    ProducerSnapshotEntry, INT64, INT16, INT32, INT64, INT32, INT64, INT32, INT64
)
# Text that is mostly checkpoint-like: digits, spaces, line breaks, signs, a few others.
checkpoint_text = st.text("0123456789 -+\t\r\nab:_\u00e9\u0663", max_size=60).map(str.encode)


def _offset_checkpoint_bytes(offsets: dict[tuple[str, int], int]) -> bytes:
    lines = [f"{topic} {partition} {offset}" for (topic, partition), offset in offsets.items()]
    return checkpoint_bytes(0, lines)


@given(st.lists(epoch_entries, max_size=8))
@counted
def test_leader_epoch_checkpoint_round_trip(entries: list[EpochEntry]) -> None:
    path = scratch_file("leader-epoch-checkpoint", leader_epoch_checkpoint_bytes(entries))
    assert read_leader_epoch_checkpoint(path) == entries


@given(
    st.one_of(
        checkpoint_text,
        valid_or_mutated(st.lists(epoch_entries, max_size=5).map(leader_epoch_checkpoint_bytes)),
    )
)
@counted
def test_leader_epoch_checkpoint_any_bytes(data: bytes) -> None:
    """Whatever is accepted writes back to the same entries; the rest names the file."""
    path = scratch_file("leader-epoch-checkpoint", data)
    try:
        entries = read_leader_epoch_checkpoint(path)
    except CorruptCheckpointError as exc:
        assert_names_file(exc, path)
        return
    assert all(-(2**31) <= e.epoch < 2**31 for e in entries)
    rewritten = scratch_file("rewritten-checkpoint", leader_epoch_checkpoint_bytes(entries))
    assert read_leader_epoch_checkpoint(rewritten) == entries


@given(offset_maps)
@counted
def test_offset_checkpoint_round_trip(offsets: dict[tuple[str, int], int]) -> None:
    path = scratch_file("replication-offset-checkpoint", _offset_checkpoint_bytes(offsets))
    assert read_offset_checkpoint(path) == offsets


@given(st.one_of(checkpoint_text, valid_or_mutated(offset_maps.map(_offset_checkpoint_bytes))))
@counted
def test_offset_checkpoint_any_bytes(data: bytes) -> None:
    path = scratch_file("recovery-point-offset-checkpoint", data)
    try:
        offsets = read_offset_checkpoint(path)
    except CorruptCheckpointError as exc:
        assert_names_file(exc, path)
        return
    rewritten = scratch_file("rewritten-offsets", _offset_checkpoint_bytes(offsets))
    assert read_offset_checkpoint(rewritten) == offsets


@given(topic_ids)
@counted
def test_partition_metadata_round_trip(topic_id: str) -> None:
    path = scratch_file("partition.metadata", partition_metadata_bytes(topic_id))
    assert read_partition_metadata(path) == topic_id


@given(valid_or_mutated(topic_ids.map(partition_metadata_bytes)))
@example(b" 0\n ----0000000000AAAAAAAB")  # found: the id came back not canonical ("...AB")
@counted
def test_partition_metadata_any_bytes(data: bytes) -> None:
    """An accepted topic id is canonical and not the reserved zero id, as Kafka's Uuid is."""
    path = scratch_file("partition.metadata", data)
    try:
        topic_id = read_partition_metadata(path)
    except CorruptCheckpointError as exc:
        assert_names_file(exc, path)
        return
    decoded = from_kafka_uuid(topic_id)
    assert to_kafka_uuid(decoded) == topic_id
    assert decoded != uuid.UUID(int=0)


@given(st.lists(snapshot_entries, max_size=6))
@counted
def test_producer_snapshot_round_trip(entries: list[ProducerSnapshotEntry]) -> None:
    path = scratch_file("00000000000000000000.snapshot", producer_snapshot_bytes(entries))
    assert read_producer_snapshot(path) == entries


@given(valid_or_mutated(st.lists(snapshot_entries, max_size=4).map(producer_snapshot_bytes)))
@counted
def test_producer_snapshot_any_bytes(data: bytes) -> None:
    """The CRC-32C covers every byte after it: any accepted file is exactly a valid snapshot."""
    path = scratch_file("00000000000000000001.snapshot", data)
    try:
        entries = read_producer_snapshot(path)
    except CorruptSnapshotError as exc:
        assert_names_file(exc, path)
        return
    assert producer_snapshot_bytes(entries) == data


@given(st.integers(0, 10**20 - 1), st.sampled_from([".log", ".index", ".snapshot", ""]))
@counted
def test_offset_file_name_round_trip(offset: int, suffix: str) -> None:
    assert parse_offset_prefix(offset_prefix(offset) + suffix) == offset


@given(st.text(max_size=30))
@counted
def test_offset_file_name_any_text(name: str) -> None:
    """Only the 20-digit names Kafka writes parse; anything else is a ValueError naming it."""
    try:
        offset = parse_offset_prefix(name)
    except ValueError as exc:
        assert repr(name) in str(exc)
        return
    assert name.startswith(offset_prefix(offset))


@given(topics, st.integers(0, 2**31 - 1))
@counted
def test_partition_dir_round_trip(topic: str, partition: int) -> None:
    name = f"{topic}-{partition}"
    expected = None if name.endswith(("-delete", "-future", "-stray")) else (topic, partition)
    assert parse_partition_dir(name) == expected


@given(st.text(max_size=40))
@counted
def test_partition_dir_any_text(name: str) -> None:
    found = parse_partition_dir(name)
    if found is not None:
        topic, partition = found
        assert f"{topic}-{partition}" == name
