"""The generated log dir must be what a live broker would have on disk.

Every expectation here is re-derived from the .log bytes (read back with kafka-python) using
Kafka's rules, never taken from the generator's own bookkeeping.
"""

from __future__ import annotations

import itertools
import struct
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
from kafka.record import MemoryRecords

from tierflow.demo.broker import (
    ACTIVE_INDEX_BYTES,
    DEMO_TOPICS,
    GeneratedLogDir,
    TopicSpec,
    generate_log_dir,
)
from tierflow.ids import is_kafka_uuid
from tierflow.kafka.checkpoint import read_offset_checkpoint
from tierflow.kafka.leader_epoch import EpochEntry, read_leader_epoch_checkpoint
from tierflow.kafka.partition_metadata import read_partition_metadata
from tierflow.kafka.producer_snapshot import ProducerSnapshotEntry, read_producer_snapshot
from tierflow.kafka.records import CODEC_GZIP, CODEC_LZ4, CODEC_NONE, CODEC_SNAPPY, CODEC_ZSTD
from tierflow.kafka.txn_index import AbortedTxn, read_txn_index

NOW_MS = 1_750_000_000_000  # fixed, so the generated dir is the same bytes on every run
SEED = 7


@dataclass(frozen=True)
class ParsedBatch:
    """A batch as read back from disk; CRC checked before its records were decoded."""

    position: int
    size: int
    base_offset: int
    last_offset: int
    leader_epoch: int
    compression: int
    timestamp_type: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    transactional: bool
    control: bool
    commit: bool | None  # marker outcome; None for data batches
    coordinator_epoch: int | None
    record_offsets: tuple[int, ...]
    record_timestamps: tuple[int, ...]


@dataclass(frozen=True)
class ParsedSegment:
    base_offset: int
    log_path: Path
    batches: tuple[ParsedBatch, ...]

    def sibling(self, suffix: str) -> Path:
        return self.log_path.with_suffix(suffix)


def read_log(path: Path) -> tuple[ParsedBatch, ...]:
    records = MemoryRecords(path.read_bytes())
    batches = []
    position = 0
    while (batch := records.next_batch()) is not None:
        assert batch.validate_crc(), f"{path}: bad CRC in batch at byte {position}"
        decoded = list(batch)
        commit = coordinator_epoch = None
        if batch.is_control_batch:
            (marker,) = decoded
            commit = marker.commit
            _version, coordinator_epoch = struct.unpack(">hi", marker.value)
        batches.append(
            ParsedBatch(
                position=position,
                size=batch.size_in_bytes,
                base_offset=batch.base_offset,
                last_offset=batch.last_offset,
                leader_epoch=batch.leader_epoch,
                compression=batch.compression_type,
                timestamp_type=batch.timestamp_type,
                max_timestamp=batch.max_timestamp,
                producer_id=batch.producer_id,
                producer_epoch=batch.producer_epoch,
                base_sequence=batch.base_sequence,
                transactional=batch.is_transactional,
                control=batch.is_control_batch,
                commit=commit,
                coordinator_epoch=coordinator_epoch,
                record_offsets=tuple(record.offset for record in decoded),
                record_timestamps=tuple(record.timestamp for record in decoded),
            )
        )
        position += batch.size_in_bytes
    assert position == path.stat().st_size, f"{path}: bytes after the last batch"
    return tuple(batches)


def read_partition(directory: Path) -> list[ParsedSegment]:
    return [
        ParsedSegment(int(log.name.split(".")[0]), log, read_log(log))
        for log in sorted(directory.glob("*.log"))
    ]


@pytest.fixture(scope="session")
def demo_dir(tmp_path_factory: pytest.TempPathFactory) -> GeneratedLogDir:
    return generate_log_dir(
        tmp_path_factory.mktemp("demo") / "kafka-logs", seed=SEED, now_ms=NOW_MS
    )


@pytest.fixture(scope="session")
def parsed(demo_dir: GeneratedLogDir) -> dict[tuple[str, int], list[ParsedSegment]]:
    return {(p.topic, p.partition): read_partition(p.path) for p in demo_dir.partitions}


SEGMENT_BYTES = 64 * 1024
INDEX_INTERVAL = 4096
Parsed = dict[tuple[str, int], list[ParsedSegment]]


def all_batches(segments: list[ParsedSegment]) -> list[ParsedBatch]:
    return [batch for segment in segments for batch in segment.batches]


def files_of(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


# --- layout -------------------------------------------------------------------------------


def test_partition_dirs_and_segment_counts(demo_dir: GeneratedLogDir, parsed: Parsed) -> None:
    expected = {(t.name, p): t.segments + 1 for t in DEMO_TOPICS for p in range(t.partitions)}
    assert {key: len(segments) for key, segments in parsed.items()} == expected
    dirs = sorted(p.name for p in demo_dir.path.iterdir() if p.is_dir())
    assert dirs == sorted(f"{topic}-{partition}" for topic, partition in expected)
    for key, segments in parsed.items():
        assert 3 <= len(segments) <= 7, key
        bases = tuple(segment.base_offset for segment in segments)
        assert demo_dir.partition(*key).segment_base_offsets == bases


def test_demo_is_small(demo_dir: GeneratedLogDir) -> None:
    total = sum(p.stat().st_size for p in demo_dir.path.rglob("*") if p.is_file())
    assert 500_000 < total < 4_000_000


def test_segment_names_match_first_batch_and_offsets_are_contiguous(parsed: Parsed) -> None:
    for key, segments in parsed.items():
        expected_next = segments[0].base_offset
        for segment in segments:
            assert segment.batches, f"{key}: empty segment {segment.log_path.name}"
            assert segment.batches[0].base_offset == segment.base_offset
            for batch in segment.batches:
                assert batch.base_offset == expected_next, (key, batch.position)
                assert batch.record_offsets == tuple(
                    range(batch.base_offset, batch.last_offset + 1)
                )
                expected_next = batch.last_offset + 1


def test_segments_roll_before_exceeding_segment_bytes(parsed: Parsed) -> None:
    for key, segments in parsed.items():
        for segment, following in itertools.pairwise(segments):
            size = segment.log_path.stat().st_size
            assert size <= SEGMENT_BYTES, key
            # Kafka rolls only when the next batch would not fit.
            assert size + following.batches[0].size > SEGMENT_BYTES, key
        assert segments[-1].log_path.stat().st_size < SEGMENT_BYTES


def test_generation_is_byte_deterministic(tmp_path: Path, demo_dir: GeneratedLogDir) -> None:
    again = generate_log_dir(tmp_path / "again", seed=SEED, now_ms=NOW_MS)
    assert files_of(again.path) == files_of(demo_dir.path)
    assert again == GeneratedLogDir(
        path=again.path,
        cluster_id=demo_dir.cluster_id,
        now_ms=NOW_MS,
        partitions=tuple(
            p.__class__(**{**p.__dict__, "path": again.path / p.path.name})
            for p in demo_dir.partitions
        ),
    )


def test_another_seed_gives_other_ids_and_data(tmp_path: Path, demo_dir: GeneratedLogDir) -> None:
    other = generate_log_dir(tmp_path / "other", seed=SEED + 1, now_ms=NOW_MS)
    assert other.cluster_id != demo_dir.cluster_id
    assert other.partition("orders", 0).topic_id != demo_dir.partition("orders", 0).topic_id
    log = "orders-0/00000000000000000000.log"
    assert files_of(other.path)[log] != files_of(demo_dir.path)[log]


# --- batches ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("topic", "codecs"),
    [
        pytest.param(
            "orders",
            {CODEC_NONE, CODEC_GZIP, CODEC_LZ4, CODEC_ZSTD},
            id="orders-none-gzip-lz4-zstd",
        ),
        pytest.param(
            "clickstream",
            {CODEC_GZIP, CODEC_LZ4, CODEC_ZSTD, CODEC_SNAPPY},
            id="clickstream-gzip-lz4-zstd-snappy",
        ),
        pytest.param(
            "payments", {CODEC_NONE, CODEC_GZIP, CODEC_ZSTD}, id="payments-none-gzip-zstd"
        ),
        pytest.param("audit-log", {CODEC_NONE}, id="audit-log-none"),
    ],
)
def test_every_partition_holds_its_topics_codecs(parsed: Parsed, topic: str, codecs: set) -> None:
    for (name, partition), segments in parsed.items():
        if name != topic:
            continue
        counts = Counter(b.compression for b in all_batches(segments) if not b.control)
        assert set(counts) == codecs, (name, partition)
        assert min(counts.values()) >= 10, (name, partition, counts)


def test_leader_epochs_change_and_match_checkpoint(parsed: Parsed, demo_dir) -> None:
    for key, segments in parsed.items():
        derived: list[EpochEntry] = []
        for batch in all_batches(segments):
            if not derived or batch.leader_epoch != derived[-1].epoch:
                assert not derived or batch.leader_epoch > derived[-1].epoch, key
                derived.append(EpochEntry(batch.leader_epoch, batch.base_offset))
        checkpoint = read_leader_epoch_checkpoint(
            demo_dir.partition(*key).path / "leader-epoch-checkpoint"
        )
        assert checkpoint == derived, key
        assert len(derived) >= 3, key
        assert derived[0].start_offset == segments[0].base_offset


def test_producer_sequences_are_consistent(parsed: Parsed) -> None:
    for key, segments in parsed.items():
        last_sequence: dict[int, tuple[int, int]] = {}
        idempotent = 0
        for batch in all_batches(segments):
            if batch.producer_id < 0:
                assert (batch.producer_epoch, batch.base_sequence) == (-1, -1), key
                assert not batch.transactional
                continue
            if batch.control:
                assert batch.base_sequence == -1
                continue
            idempotent += 1
            previous = last_sequence.get(batch.producer_id)
            if previous is not None:
                assert (batch.producer_epoch, batch.base_sequence) == (previous[0], previous[1] + 1)
            else:
                assert batch.base_sequence == 0
            count = batch.last_offset - batch.base_offset + 1
            last_sequence[batch.producer_id] = (
                batch.producer_epoch,
                batch.base_sequence + count - 1,
            )
        assert idempotent > 50 and len(last_sequence) >= 3, key


def test_transactions_have_both_outcomes(parsed: Parsed) -> None:
    for (topic, partition), segments in parsed.items():
        markers = [b for b in all_batches(segments) if b.control]
        transactional = topic in ("orders", "payments")
        if not transactional:
            assert not markers and not any(b.transactional for b in all_batches(segments))
            continue
        outcomes = Counter(marker.commit for marker in markers)
        assert outcomes[True] >= 1 and outcomes[False] >= 1, (topic, partition)
        assert all(m.transactional and m.compression == CODEC_NONE for m in markers)


def test_timestamps_are_recent_and_log_append_time_is_used(parsed: Parsed) -> None:
    for (topic, partition), segments in parsed.items():
        batches = all_batches(segments)
        stamps = [ts for b in batches for ts in b.record_timestamps]
        assert min(stamps) > NOW_MS - 4 * 86_400_000 and max(stamps) < NOW_MS
        assert max(stamps) - min(stamps) > 2 * 86_400_000  # spread over days, not seconds
        log_append = [b for b in batches if b.timestamp_type == 1]
        if topic == "payments":
            data = [b for b in batches if not b.control]
            assert log_append == data
            maxima = [b.max_timestamp for b in log_append]
            assert maxima == sorted(maxima), "broker clock must not run backwards"
            for batch in log_append:
                assert set(batch.record_timestamps) == {batch.max_timestamp}
        else:
            assert not log_append, (topic, partition)
        for batch in batches:
            if batch.timestamp_type == 0:
                assert batch.max_timestamp == max(batch.record_timestamps)


# --- indexes ------------------------------------------------------------------------------


def expected_indexes(
    segment: ParsedSegment, *, rolled: bool
) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Kafka's LogSegment.append index rules replayed over the segment's batches."""
    offsets: list[tuple[int, int]] = []
    times: list[tuple[int, int]] = []
    since_last = 0
    max_ts, max_ts_offset = -1, -1

    def maybe_time_entry() -> None:
        if max_ts != -1 and (not times or max_ts > times[-1][0]):
            times.append((max_ts, max_ts_offset))

    for batch in segment.batches:
        if batch.max_timestamp > max_ts:
            max_ts, max_ts_offset = batch.max_timestamp, batch.last_offset
        if since_last > INDEX_INTERVAL:
            offsets.append((batch.last_offset, batch.position))
            maybe_time_entry()
            since_last = 0
        since_last += batch.size
    if rolled:
        maybe_time_entry()
    return offsets, times


def read_entries(path: Path, fmt: str) -> tuple[list[tuple[int, int]], bytes]:
    """Entries before the first all-zero slot, and the rest of the file."""
    data = path.read_bytes()
    size = struct.calcsize(fmt)
    entries = []
    position = 0
    while position + size <= len(data) and any(data[position : position + size]):
        entries.append(struct.unpack_from(fmt, data, position))
        position += size
    return entries, data[position:]


def test_offset_and_time_indexes_follow_kafkas_rules(parsed: Parsed) -> None:
    for key, segments in parsed.items():
        for number, segment in enumerate(segments):
            rolled = number < len(segments) - 1
            want_offsets, want_times = expected_indexes(segment, rolled=rolled)
            raw_offsets, offset_tail = read_entries(segment.sibling(".index"), ">ii")
            raw_times, time_tail = read_entries(segment.sibling(".timeindex"), ">qi")
            base = segment.base_offset
            assert [(base + rel, pos) for rel, pos in raw_offsets] == want_offsets, key
            assert [(ts, base + rel) for ts, rel in raw_times] == want_times, key
            assert len(want_offsets) >= (3 if rolled else 1), key
            if rolled:
                assert offset_tail == b"" and time_tail == b"", key
            else:
                # The active segment's indexes are preallocated and zero filled, as Kafka's mmap.
                assert segment.sibling(".index").stat().st_size == ACTIVE_INDEX_BYTES
                assert segment.sibling(".timeindex").stat().st_size == ACTIVE_INDEX_BYTES // 12 * 12
                assert not any(offset_tail) and not any(time_tail) and len(offset_tail) > 4096


def test_index_entries_point_at_batch_starts(parsed: Parsed) -> None:
    for segments in parsed.values():
        for segment in segments:
            by_position = {batch.position: batch for batch in segment.batches}
            entries, _ = read_entries(segment.sibling(".index"), ">ii")
            for relative, position in entries:
                assert by_position[position].last_offset == segment.base_offset + relative


def test_time_indexes_are_monotonic(parsed: Parsed) -> None:
    for segments in parsed.values():
        for segment in segments:
            entries, _ = read_entries(segment.sibling(".timeindex"), ">qi")
            assert entries
            assert all(a[0] < b[0] and a[1] <= b[1] for a, b in itertools.pairwise(entries))


# --- producer state: snapshots and aborted transactions -----------------------------------


class Replay:
    """Kafka's ProducerStateManager rules, replayed from batches read back from disk."""

    def __init__(self) -> None:
        self.entries: dict[int, ProducerSnapshotEntry] = {}

    def apply(self, batch: ParsedBatch) -> AbortedTxn | None:
        if batch.producer_id < 0:
            return None
        old = self.entries.get(batch.producer_id)
        if batch.control:
            assert old is not None and old.current_txn_first_offset != -1
            aborted = None
            if not batch.commit:
                others = [
                    e.current_txn_first_offset
                    for pid, e in self.entries.items()
                    if pid != batch.producer_id and e.current_txn_first_offset != -1
                ]
                lso = min(others, default=batch.base_offset + 1)
                aborted = AbortedTxn(
                    batch.producer_id, old.current_txn_first_offset, batch.base_offset, lso
                )
            self.entries[batch.producer_id] = ProducerSnapshotEntry(
                batch.producer_id,
                batch.producer_epoch,
                old.last_sequence,
                old.last_offset,
                old.offset_delta,
                batch.max_timestamp,
                batch.coordinator_epoch,
                -1,
            )
            return aborted
        txn_first = -1 if old is None else old.current_txn_first_offset
        if batch.transactional and txn_first == -1:
            txn_first = batch.base_offset
        delta = batch.last_offset - batch.base_offset
        self.entries[batch.producer_id] = ProducerSnapshotEntry(
            batch.producer_id,
            batch.producer_epoch,
            batch.base_sequence + delta,
            batch.last_offset,
            delta,
            batch.max_timestamp,
            -1 if old is None else old.coordinator_epoch,
            txn_first,
        )
        return None

    def snapshot(self) -> list[ProducerSnapshotEntry]:
        return [self.entries[pid] for pid in sorted(self.entries)]


def test_snapshots_at_each_roll_hold_producer_state(parsed: Parsed) -> None:
    open_at_roll = 0
    for key, segments in parsed.items():
        directory = segments[0].log_path.parent
        replay = Replay()
        expected_names = set()
        for segment, following in itertools.pairwise(segments):
            for batch in segment.batches:
                replay.apply(batch)
            name = f"{following.base_offset:020d}.snapshot"
            expected_names.add(name)
            entries = read_producer_snapshot(directory / name)
            assert entries == replay.snapshot(), (key, name)
            open_at_roll += sum(e.current_txn_first_offset != -1 for e in entries)
        assert {p.name for p in directory.glob("*.snapshot")} == expected_names, key
    assert open_at_roll >= 1, "some transaction should span a segment roll"


def test_txn_indexes_hold_aborts_with_their_last_stable_offset(parsed: Parsed) -> None:
    held_back = 0
    for key, segments in parsed.items():
        replay = Replay()
        for segment in segments:
            aborts = [a for b in segment.batches if (a := replay.apply(b)) is not None]
            path = segment.sibling(".txnindex")
            if not aborts:
                assert not path.exists(), (key, path.name)
                continue
            assert read_txn_index(path) == aborts, key
            held_back += sum(a.last_stable_offset != a.last_offset + 1 for a in aborts)
    assert held_back >= 1, "an abort while another producer's txn is open pins the LSO"


# --- checkpoints and metadata -------------------------------------------------------------


def test_root_checkpoints(demo_dir: GeneratedLogDir, parsed: Parsed) -> None:
    root = demo_dir.path
    high_watermarks = read_offset_checkpoint(root / "replication-offset-checkpoint")
    log_starts = read_offset_checkpoint(root / "log-start-offset-checkpoint")
    recovery = read_offset_checkpoint(root / "recovery-point-offset-checkpoint")
    assert set(high_watermarks) == set(log_starts) == set(recovery) == set(parsed)
    lagging = []
    for key, segments in parsed.items():
        log_end = segments[-1].batches[-1].last_offset + 1
        assert demo_dir.partition(*key).log_end_offset == log_end
        assert log_starts[key] == segments[0].base_offset
        assert recovery[key] == segments[-1].base_offset
        if high_watermarks[key] != log_end:
            lagging.append(key)
            last_rolled = segments[-2]
            starts = [b.base_offset for b in last_rolled.batches]
            assert high_watermarks[key] in starts[1:], "HW must sit inside the last rolled segment"
    assert lagging == [("orders", 1)]
    assert log_starts[("clickstream", 0)] == 48_213


def test_partition_metadata_topic_ids(demo_dir: GeneratedLogDir) -> None:
    ids: dict[str, set[str]] = {}
    for partition in demo_dir.partitions:
        topic_id = read_partition_metadata(partition.path / "partition.metadata")
        assert topic_id == partition.topic_id and is_kafka_uuid(topic_id)
        ids.setdefault(partition.topic, set()).add(topic_id)
    assert all(len(topic_ids) == 1 for topic_ids in ids.values())
    assert len(set().union(*ids.values())) == len(ids)


def test_meta_properties(demo_dir: GeneratedLogDir) -> None:
    lines = (demo_dir.path / "meta.properties").read_text().splitlines()
    props = dict(line.split("=", 1) for line in lines if not line.startswith("#"))
    assert props["version"] == "1" and props["broker.id"] == "0" and props["node.id"] == "0"
    assert props["cluster.id"] == demo_dir.cluster_id and is_kafka_uuid(props["cluster.id"])


# --- arguments ----------------------------------------------------------------------------


def test_custom_topics_and_sizes(tmp_path: Path) -> None:
    topic = TopicSpec("events", partitions=1, segments=2, codecs=(CODEC_LZ4,))
    generated = generate_log_dir(
        tmp_path / "logs", topics=(topic,), segment_bytes=16 * 1024, index_interval_bytes=1024
    )
    segments = read_partition(generated.path / "events-0")
    assert len(segments) == 3
    assert all(s.log_path.stat().st_size <= 16 * 1024 for s in segments)
    assert {b.compression for s in segments for b in s.batches} == {CODEC_LZ4}
    assert max(b.max_timestamp for s in segments for b in s.batches) < generated.now_ms


def test_refuses_non_empty_dir_and_tiny_segments(tmp_path: Path) -> None:
    (tmp_path / "stale").write_text("x")
    with pytest.raises(FileExistsError, match="non-empty"):
        generate_log_dir(tmp_path)
    with pytest.raises(ValueError, match="segment_bytes"):
        generate_log_dir(tmp_path / "new", segment_bytes=4096)
    with pytest.raises(ValueError, match="unique"):
        generate_log_dir(tmp_path / "dup", topics=(DEMO_TOPICS[0], DEMO_TOPICS[0]))
