"""The read path returns exactly the bytes a classic segment holds for the same offsets, with
one ranged GET per contiguous run, and continues from tiered segments into the WAL."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pytest
from kafka.record.default_records import DefaultRecordBatch

from tests.diskless.diskless_support import NOW, TOPIC, TOPIC_ID, Env, make_env, records
from tests.support.tiered import build_tiered
from tierflow.diskless.coordinator import DisklessCoordinator
from tierflow.diskless.errors import DisklessOffsetOutOfRangeError, WalFormatError
from tierflow.diskless.writer import WalWriter
from tierflow.kafka.batch_builder import build_batch
from tierflow.kafka.record_batch import iter_batches
from tierflow.kafka.records import CODEC_GZIP, CODEC_LZ4, CODEC_ZSTD
from tierflow.lifecycle.copy.steps import copy_partition
from tierflow.read.diskless import fetch_diskless, plan_fetch, read_planned
from tierflow.storage.local import LocalDirectoryObjectStore
from tierflow.storage.object_store import ObjectStore


class CountingStore(LocalDirectoryObjectStore):
    """The local bucket, noting every ranged read it serves."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.ranges: list[tuple[str, int, int | None]] = []

    def read_range(self, key: str, start: int = 0, end: int | None = None) -> bytes:
        self.ranges.append((key, start, end))
        return super().read_range(key, start, end)


CODECS = [None, CODEC_GZIP, CODEC_LZ4, CODEC_ZSTD]


def _classic(tag: str, count: int, codec: int | None, base: int, epoch: int) -> bytes:
    """The batch as a broker appends it to a classic segment."""
    recs = records(tag, count, size=200)
    return build_batch(recs, base_offset=base, leader_epoch=epoch, compression=codec or 0)


def test_fetched_batches_are_byte_identical_to_a_classic_segment(sqlite_env: Env) -> None:
    env = sqlite_env
    env.coordinator.set_leader_epoch(TOPIC_ID, 0, 4, now_ms=NOW)
    writer = env.writer()
    classic: list[bytes] = []
    offset = 0
    for i in range(8):
        codec = CODECS[i % 4]
        count = 1 + i % 3
        classic.append(_classic(f"b{i}", count, codec, offset, 4))
        producer = _classic(f"b{i}", count, codec, 0, -1)
        writer.append(TOPIC_ID, 0, producer)
        writer.append(TOPIC_ID, 1, producer)  # interleaved with another partition
        offset += count
        if i % 3 == 2:
            writer.flush()
    writer.flush()
    fetched = fetch_diskless(env.coordinator, env.objects, TOPIC, 0, 0, max_bytes=1 << 20)
    assert fetched.batches == classic
    assert (fetched.first_offset, fetched.next_offset) == (0, offset)
    assert fetched.high_watermark == offset
    middle = fetch_diskless(env.coordinator, env.objects, TOPIC, 0, 4, max_bytes=1)
    assert middle.batches == [classic[2]], "the batch holding offset 4, even past max_bytes"


def test_one_ranged_get_per_contiguous_run(tmp_path: Path) -> None:
    env = make_env(f"sqlite:///{tmp_path / 'm.db'}", tmp_path / "bucket")
    counting = CountingStore(tmp_path / "bucket")
    writer = env.writer()
    for obj in range(3):
        for i in range(4):
            for partition in (0, 1):
                writer.append(TOPIC_ID, partition, _classic(f"{obj}-{i}", 2, None, 0, -1))
        writer.flush()
    plan = plan_fetch(env.coordinator, TOPIC_ID, 1, 0, max_bytes=1 << 20)
    fetched = read_planned(counting, plan)
    assert len(fetched.batches) == 12
    # Partition 1's four batches are one run in each of the three objects: three GETs.
    keys = [b.object_key for b in plan.batches]
    assert [key for key, _, _ in counting.ranges] == sorted(set(keys), key=keys.index)
    assert fetched.ranged_gets == 3
    starts = {b.object_key: b.byte_offset for b in plan.batches if b.base_offset % 8 == 0}
    ends = {b.object_key: b.byte_end for b in plan.batches}
    assert counting.ranges == [(k, starts[k], ends[k]) for k, _, _ in counting.ranges]
    assert fetched.bytes_read == sum(b.byte_size for b in plan.batches)


def test_log_append_time_topics_get_the_append_time_as_a_broker_would_stamp_it(
    tmp_path: Path,
) -> None:
    env = make_env(
        f"sqlite:///{tmp_path / 'm.db'}", tmp_path / "bucket", timestamp_type="LogAppendTime"
    )
    writer = env.writer(clock=lambda: NOW + 77)
    writer.append(TOPIC_ID, 2, _classic("lat", 3, CODEC_ZSTD, 0, -1))
    writer.flush()
    (batch,) = fetch_diskless(env.coordinator, env.objects, TOPIC, 2, 0).batches
    expected = build_batch(
        records("lat", 3, size=200),
        base_offset=0,
        leader_epoch=0,
        compression=CODEC_ZSTD,
        log_append_time=NOW + 77,
    )
    assert batch == expected
    parsed = DefaultRecordBatch(batch)
    assert parsed.validate_crc() and parsed.timestamp_type == 1


def test_out_of_range_and_damaged_objects_are_named(sqlite_env: Env) -> None:
    env = sqlite_env
    writer = env.writer()
    writer.append(TOPIC_ID, 0, _classic("x", 2, None, 0, -1))
    flushed = writer.flush()
    assert flushed is not None
    with pytest.raises(DisklessOffsetOutOfRangeError, match=r"offset 3 is out of range .* 2\)"):
        fetch_diskless(env.coordinator, env.objects, TOPIC, 0, 3)
    empty = fetch_diskless(env.coordinator, env.objects, TOPIC, 0, 2)
    assert empty.batches == [] and empty.next_offset == 2, "at the high watermark: nothing yet"
    path = env.bucket / flushed.object_key
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(WalFormatError, match=rf"{flushed.object_key}: byte 1: crc mismatch"):
        fetch_diskless(env.coordinator, env.objects, TOPIC, 0, 0)


def _batches_of(paths: Iterable[Path]) -> list[tuple[bytes, int]]:
    """(bytes, partition leader epoch) of every batch of the given segment files."""
    found = []
    for path in paths:
        data = path.read_bytes()
        for header in iter_batches(path):
            raw = data[header.position : header.end_position]
            found.append((raw, header.partition_leader_epoch))
    return found


def test_a_fetch_continues_from_tiered_segments_into_the_wal(tmp_path: Path) -> None:
    """A partition whose older segments are tiered: its newer batches are produced into the
    WAL, and one fetch from offset 0 returns every batch of the classic log, byte for byte."""
    t = build_tiered(tmp_path, layout="plain")
    log_ = t.log("payments", 0)
    report = copy_partition(log_, t.store, t.rsm, owner="test")
    assert report.copied, "the fixture tiers some segments"
    topic_id = t.store.topic("payments").topic_id
    tiered_end = t.store.partition(topic_id, 0).highest_remote_offset
    coordinator = DisklessCoordinator.for_store(t.store)
    coordinator.register_topic(
        topic_id,
        1,
        now_ms=NOW,
        start_offsets={0: tiered_end + 1},
        log_start_offsets={0: log_.log_start_offset()},
    )
    classic = _batches_of(segment.log_path for segment in log_.segments())
    objects: ObjectStore = LocalDirectoryObjectStore(Path(t.settings.remote_storage))
    writer = WalWriter(coordinator, objects, buffer_max_bytes=1 << 20, commit_interval_ms=0)
    tiered_count = 0
    for raw, epoch in classic:
        base = int.from_bytes(raw[:8], "big", signed=True)
        if base <= tiered_end:
            tiered_count += 1
            continue
        if epoch > coordinator.log(topic_id, 0).leader_epoch:
            writer.flush()  # batches carry the epoch current when they are committed
            coordinator.set_leader_epoch(topic_id, 0, epoch, now_ms=NOW)
        writer.append(topic_id, 0, raw, source="classic")
    writer.flush()
    assert 0 < tiered_count < len(classic)
    start = log_.log_start_offset()
    fetched = fetch_diskless(
        coordinator, objects, "payments", 0, start, max_bytes=1 << 30, store=t.store, rsm=t.rsm
    )
    assert fetched.tiered is not None and len(fetched.tiered.batches) == tiered_count
    assert fetched.batches == [raw for raw, _ in classic]
    assert fetched.next_offset == coordinator.log(topic_id, 0).high_watermark
    # A small fetch in the tiered part stays there; one at the WAL start reads only the WAL.
    small = fetch_diskless(
        coordinator, objects, "payments", 0, start, max_bytes=1, store=t.store, rsm=t.rsm
    )
    assert small.batches == [classic[0][0]] and small.objects_read == []
    wal_only = fetch_diskless(coordinator, objects, "payments", 0, tiered_end + 1)
    assert wal_only.batches == [raw for raw, _ in classic[tiered_count:]][: len(wal_only.batches)]
    assert wal_only.tiered is None
