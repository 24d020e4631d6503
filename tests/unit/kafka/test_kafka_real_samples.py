"""Every real broker-written file in ../shared/kafka-samples, cross-checked.

Batches are compared with kafka-python used directly; checkpoints, snapshots and indexes are
compared with what the .log files say and rewritten byte for byte. Skips when the samples are
absent.
"""

from __future__ import annotations

import csv
import struct
from pathlib import Path

import pytest
from kafka.record import MemoryRecords

from tests.unit.kafka.log_builders import SAMPLES
from tierflow.ids import is_kafka_uuid
from tierflow.kafka.checkpoint import (
    CLEANER_OFFSET_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_OFFSET_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    checkpoint_bytes,
    read_offset_checkpoint,
)
from tierflow.kafka.errors import CorruptRecordError
from tierflow.kafka.leader_epoch import leader_epoch_checkpoint_bytes
from tierflow.kafka.log_dir import METADATA_TOPIC, LogDir, PartitionLog
from tierflow.kafka.naming import parse_partition_dir
from tierflow.kafka.offset_index import OffsetIndex
from tierflow.kafka.partition_metadata import partition_metadata_bytes
from tierflow.kafka.producer_snapshot import producer_snapshot_bytes, read_producer_snapshot
from tierflow.kafka.record_batch import iter_batches, valid_bytes
from tierflow.kafka.time_index import TimeIndex

MESSAGE_SETS = "kafka-rust__kafka-rust/derived_message_sets"
# kafka-rust's test-data holds whole fetch responses (minus the size field), not message sets;
# the derived_message_sets are their message-set parts. Checked in test_fetch_responses.
FETCH_RESPONSES = "kafka-rust__kafka-rust/test-data"
INVALID_CRC = "fetch2.mytopic.nocompression.invalid_crc.kafka.0900.messageset"


def _sample_logs() -> list[Path]:
    if not SAMPLES.is_dir():
        return []
    logs = [p for p in SAMPLES.rglob("*.log") if parse_partition_dir(p.parent.name)]
    return sorted(logs) + sorted((SAMPLES / MESSAGE_SETS).glob("*.messageset"))


def _log_dir_roots() -> list[Path]:
    if not SAMPLES.is_dir():
        return []
    return sorted(p.parent for p in SAMPLES.rglob(REPLICATION_OFFSET_CHECKPOINT))


def _ids(paths: list[Path]) -> list[str]:
    return [str(p.relative_to(SAMPLES)) for p in paths]


LOGS = _sample_logs()
ROOTS = _log_dir_roots()


def kafka_python_view(data: bytes) -> list[tuple[int, int, int, bool]]:
    """(position, base offset, last offset, crc ok) per batch, from kafka-python directly."""
    view, position = [], 0
    records = MemoryRecords(data)
    while records.has_next():
        batch = records.next_batch()
        crc_ok = batch.validate_crc()  # before iterating, or legacy wrappers answer wrongly
        if batch.magic == 2:
            base, last = batch.base_offset, batch.last_offset
        else:  # Kafka: a wrapper's base is its first inner offset, its own offset the last
            base, last = next(iter(batch)).offset, batch.base_offset
        view.append((position, base, last, crc_ok))
        position += batch.size_in_bytes
    return view


@pytest.mark.parametrize("log", LOGS, ids=_ids(LOGS))
def test_batches_agree_with_kafka_python(samples_root: Path, log: Path) -> None:
    expected = kafka_python_view(log.read_bytes())
    headers = list(iter_batches(log, validate_crc=False))
    assert [(h.position, h.base_offset, h.last_offset) for h in headers] == [
        e[:3] for e in expected
    ]
    bad = [e[0] for e in expected if not e[3]]
    if bad:
        with pytest.raises(CorruptRecordError) as err:
            list(iter_batches(log))
        assert err.value.position == bad[0]
        assert valid_bytes(log) == bad[0]
    else:
        assert list(iter_batches(log)) == headers
        assert valid_bytes(log) == log.stat().st_size


def test_samples_cover_legacy_codecs_and_v2(samples_root: Path) -> None:
    seen = {
        (h.magic, h.compression_type) for log in LOGS for h in iter_batches(log, validate_crc=False)
    }
    assert {(0, 0), (0, 1), (0, 2), (2, 0), (2, 1), (2, 3)} <= seen


def test_planted_bad_crc_is_reported(samples_root: Path) -> None:
    path = samples_root / MESSAGE_SETS / INVALID_CRC
    with pytest.raises(CorruptRecordError, match="crc mismatch") as err:
        list(iter_batches(path))
    assert err.value.position == 0
    assert str(err.value).startswith(f"{path}: byte 0: ")
    # The good twin differs only in those CRC bytes.
    good = samples_root / MESSAGE_SETS / INVALID_CRC.replace(".invalid_crc", "")
    assert [h.crc for h in iter_batches(good)] == [0x7E196BB4]


def test_fetch_responses_wrap_the_message_sets(samples_root: Path) -> None:
    """FetchResponse v0 framing around each message set; its high watermark = last offset + 1."""
    for message_set in sorted((samples_root / MESSAGE_SETS).glob("*.messageset")):
        response = (samples_root / FETCH_RESPONSES / message_set.stem).read_bytes()
        _correlation, _topics, name_len = struct.unpack_from(">iih", response)
        pos = 10 + name_len
        _partitions, _partition, error, high_watermark, size = struct.unpack_from(
            ">iihqi", response, pos
        )
        assert error == 0
        assert response[pos + 22 :] == message_set.read_bytes()
        assert size == message_set.stat().st_size
        last = list(iter_batches(message_set, validate_crc=False))[-1].last_offset
        assert high_watermark == last + 1


def _provenance_partition_dirs(root: Path) -> set[str]:
    """Partition directories the provenance list says were captured under ``root``."""
    rel_root = root.relative_to(SAMPLES)
    repo_dir, inside = rel_root.parts[0], Path(*rel_root.parts[1:])
    names = set()
    with (SAMPLES / "PROVENANCE.tsv").open() as f:
        for row in csv.DictReader(f, delimiter="\t"):
            path = Path(row["path"])
            ours = row["repo"].replace("/", "__") == repo_dir and path.parent.parent == inside
            if ours and row["status"] == "OK":
                names.add(path.parent.name)
    return names


@pytest.mark.parametrize("root", ROOTS, ids=_ids(ROOTS))
def test_log_dir_lists_the_captured_partitions(samples_root: Path, root: Path) -> None:
    partitions = LogDir(root).partitions()
    # Kafka's LogManager.loadLogs skips the KRaft metadata log (thanhnhadev, Kafka 4.0): it is
    # the Raft client's, so no root checkpoint lists it either.
    captured = _provenance_partition_dirs(root) - {f"{METADATA_TOPIC}-0"}
    assert {p.path.name for p in partitions} == captured
    replicated = read_offset_checkpoint(root / REPLICATION_OFFSET_CHECKPOINT)
    assert {p.key for p in partitions} <= set(replicated)


def _brokers_in_sample(root: Path) -> int:
    """How many broker log dirs the same sample repository holds (cesaralcancio: 5)."""
    repo = root.relative_to(SAMPLES).parts[0]
    return sum(1 for other in ROOTS if other.relative_to(SAMPLES).parts[0] == repo)


def _loaded_high_watermark(checkpointed: int, log_start: int, leo: int) -> int:
    """What a broker makes of the checkpoint: UnifiedLog.updateHighWatermark clamps it into
    [log start, log end], since an unclean shutdown can lose records the checkpoint covered."""
    return min(max(checkpointed, log_start), leo)


@pytest.mark.parametrize("root", ROOTS, ids=_ids(ROOTS))
def test_offsets_agree_with_the_logs(samples_root: Path, root: Path) -> None:
    several_brokers = _brokers_in_sample(root) > 1
    for partition in LogDir(root).partitions():
        leo = partition.log_end_offset()
        checkpointed = partition.high_watermark()
        assert checkpointed is not None, partition.key
        # thanhnhadev demos-topic-0 checkpoints 8 over an empty log never flushed (recovery
        # point 0): a broker loading it would start from 0.
        loaded = _loaded_high_watermark(checkpointed, partition.log_start_offset(), leo)
        if several_brokers:
            # A follower learns the leader's high watermark only on its next fetch, and a
            # leader's waits for its followers, so a replica's may trail its log end
            # (cesaralcancio kafka2 __consumer_offsets-19: 3927 of 3930).
            assert loaded <= leo, partition.key
        else:
            # A single broker is the whole ISR: everything it appended was committed.
            assert loaded == leo, partition.key
        recovery = partition.recovery_point()
        assert recovery is not None and recovery <= leo
        first = next((b for s in partition.segments() for b in s.batches()), None)
        if first is not None:
            assert partition.log_start_offset() <= first.base_offset


@pytest.mark.parametrize("root", ROOTS, ids=_ids(ROOTS))
def test_root_checkpoints_rewrite_byte_for_byte(samples_root: Path, root: Path) -> None:
    for name in (
        REPLICATION_OFFSET_CHECKPOINT,
        RECOVERY_POINT_OFFSET_CHECKPOINT,
        LOG_START_OFFSET_CHECKPOINT,
        CLEANER_OFFSET_CHECKPOINT,
    ):
        path = root / name
        offsets = read_offset_checkpoint(path)
        raw = path.read_bytes()
        if not raw:
            # Real brokers leave 0-byte cleaner-offset-checkpoints; Kafka reads them as empty.
            assert offsets == {}
            continue
        lines = [f"{t} {p} {o}" for (t, p), o in offsets.items()]
        assert checkpoint_bytes(0, lines) == raw, path


def _check_leader_epochs(partition: PartitionLog, leo: int) -> None:
    raw = (partition.path / "leader-epoch-checkpoint").read_bytes()
    entries = partition.leader_epoch_entries()
    if not raw:
        # Kafka's CheckpointFile creates the file empty and reads an empty file as no entries.
        # A follower adds an epoch only when it appends fetched batches, so one that never got
        # a record keeps it empty (cesaralcancio: 8 replicas, all with an empty log).
        assert entries == [] and leo == partition.log_start_offset()
        return
    assert leader_epoch_checkpoint_bytes(entries) == raw
    assert [e.epoch for e in entries] == sorted({e.epoch for e in entries})
    assert all(e.start_offset <= leo for e in entries)
    starts = {e.epoch: e.start_offset for e in entries}
    for segment in partition.segments():
        for seen in segment.leader_epochs():
            # The checkpoint records where the epoch began; compaction may since have removed
            # the first batches (e.g. DonaldY __consumer_offsets-39 starts at offset 4), so the
            # first surviving batch is at or after it. The reverse does not hold: an epoch can
            # begin at the log end with no batch yet (tuyen-nnt: "2 11" with LEO 11).
            assert seen.epoch in starts and starts[seen.epoch] <= seen.start_offset


def _check_snapshots(partition: PartitionLog, leo: int) -> None:
    for offset in partition.snapshot_offsets():
        path = partition.producer_snapshot_path(offset)
        entries = read_producer_snapshot(path)
        assert producer_snapshot_bytes(entries) == path.read_bytes()
        assert offset <= leo
        for entry in entries:
            assert 0 <= entry.last_offset - entry.offset_delta <= entry.last_offset < offset


def _check_indexes(partition: PartitionLog) -> None:
    for segment in partition.segments():
        if segment.index_path.exists():
            index = OffsetIndex.read(
                segment.index_path, segment.base_offset, log_size=segment.size_in_bytes()
            )
            for entry in index.entries:
                batch = next(iter_batches(segment.log_path, start_position=entry.position))
                assert batch.base_offset <= entry.offset <= batch.last_offset
        if segment.time_index_path.exists():
            last_offset = segment.last_offset()
            time_index = TimeIndex.read(
                segment.time_index_path, segment.base_offset, last_offset=last_offset
            )
            by_last_offset = {b.last_offset: b for b in segment.batches()}
            for entry in time_index.entries:
                # Kafka indexes (max timestamp so far, last offset of the batch holding it).
                assert by_last_offset[entry.offset].max_timestamp == entry.timestamp
            if time_index.entries:
                assert time_index.entries[-1].timestamp == segment.largest_timestamp()


@pytest.mark.parametrize("root", ROOTS, ids=_ids(ROOTS))
def test_partition_files_agree_with_the_logs(samples_root: Path, root: Path) -> None:
    topic_ids: dict[str, str] = {}
    for partition in LogDir(root).partitions():
        leo = partition.log_end_offset()
        if (partition.path / "leader-epoch-checkpoint").exists():
            _check_leader_epochs(partition, leo)
        _check_snapshots(partition, leo)
        _check_indexes(partition)
        topic_id = partition.topic_id()
        if topic_id is not None:
            assert is_kafka_uuid(topic_id)
            meta = partition.path / "partition.metadata"
            assert partition_metadata_bytes(topic_id) == meta.read_bytes()
            # One id per topic, and no two topics share one.
            assert topic_ids.setdefault(partition.topic, topic_id) == topic_id
    assert len(set(topic_ids.values())) == len(topic_ids)


def test_real_producer_snapshot_contents(samples_root: Path) -> None:
    """The one non-empty snapshot: three idempotent producers, no open transactions."""
    path = samples_root / "DonaldY__kafka-2.7.1/kafka-logs/myTopic-0/00000000000000000038.snapshot"
    entries = read_producer_snapshot(path)
    assert [(e.producer_id, e.last_sequence, e.last_offset) for e in entries] == [
        (4001, 11, 11),
        (4002, 11, 23),
        (4003, 13, 37),
    ]
    assert {e.current_txn_first_offset for e in entries} == {-1}
    assert {e.coordinator_epoch for e in entries} == {-1}
