"""``tierflow diskless describe``: per topic offsets and sizes, per object total and used size,
as the WAL changes under a partial merge, a full merge and garbage collection."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.diskless.diskless_support import NOW, TOPIC, TOPIC_ID, producer_batch_bytes
from tests.diskless.merge_support import PARTITIONS, Consolidated, consolidated
from tests.support.settings_env import use_settings
from tierflow.cli import main
from tierflow.diskless.describe import describe
from tierflow.diskless.gc import collect_garbage
from tierflow.diskless.merge import merge_partition
from tierflow.diskless.wal_object import HEADER_SIZE
from tierflow.diskless.writer import WalWriter
from tierflow.units import human_bytes

OTHER, OTHER_ID = "audit", "a2Dq7iPXQfSdD0wL4RZ0NA"


def test_figures_follow_the_wal_through_merges_and_collection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    world = consolidated(tmp_path, objects=3)
    world.store.register_topic(OTHER, OTHER_ID, actor="t", now_ms=NOW)  # tiering off
    world.coordinator.register_topic(OTHER_ID, 1, now_ms=NOW)
    writer = WalWriter(
        world.coordinator, world.objects, buffer_max_bytes=1 << 20, commit_interval_ms=0
    )
    writer.append(OTHER_ID, 0, producer_batch_bytes("x", 2))
    writer.append(TOPIC_ID, 0, producer_batch_bytes("y", 1))  # shares the object with OTHER
    shared = writer.flush()
    assert shared is not None

    objects = world.coordinator.wal_objects()
    sizes = {p: world.coordinator.log(TOPIC_ID, p).byte_size for p in range(PARTITIONS)}
    overview = describe(world.coordinator, world.store)
    events, audit = (next(t for t in overview.topics if t.topic == n) for n in (TOPIC, OTHER))
    assert events.merged_into_tiered_storage and not audit.merged_into_tiered_storage
    assert events.size_on_object_storage == sum(sizes.values())
    assert (events.objects, events.objects_bytes) == (4, sum(o.total_size for o in objects))
    assert (audit.objects, audit.objects_bytes) == (1, shared_total(world, shared.object_key))
    assert events.objects_with_deleted_batches == 0 and events.tiered_segments == 0
    assert [(p.partition, p.log_start_offset, p.wal_start_offset) for p in events.partitions] == [
        (p, 0, 0) for p in range(PARTITIONS)
    ]

    # Partition 0 merged: every object still holds partitions 1 and 2, now beside garbage.
    merge_partition(
        world.coordinator, world.store, world.rsm, world.objects, TOPIC_ID, 0,
        world.options(), owner="t",
    )  # fmt: skip
    overview = describe(world.coordinator, world.store)
    events, audit = (next(t for t in overview.topics if t.topic == n) for n in (TOPIC, OTHER))
    assert events.size_on_object_storage == sizes[1] + sizes[2]
    assert events.objects == 3, "the shared object holds none of its batches any more"
    assert events.objects_with_deleted_batches == 3
    assert events.deleted_bytes_in_objects == sizes[0] - len(producer_batch_bytes("y", 1))
    assert (audit.objects, audit.objects_with_deleted_batches) == (1, 1)
    assert audit.deleted_bytes_in_objects == len(producer_batch_bytes("y", 1))
    p0 = events.partitions[0]
    assert p0.tiered_end_offset == p0.wal_start_offset - 1 == p0.high_watermark - 1
    assert events.tiered_bytes == sizes[0] and events.tiered_segments > 1
    by_key = {o.key: o for o in overview.objects}
    for wal in world.coordinator.wal_objects():
        live = world.coordinator.object_batches(wal.object_key)
        assert by_key[wal.object_key].used_size == sum(b.byte_size for b in live)
        assert by_key[wal.object_key].total_size == wal.total_size
    assert by_key[shared.object_key].topics == [OTHER]

    # The same figures from the command line, as JSON and as tables.
    use_settings(monkeypatch, world.settings)
    assert main(["diskless", "describe", "--objects", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads(json.dumps(overview.as_dict()))
    assert main(["diskless", "describe", "--topic", TOPIC, "--objects"]) == 0
    table = capsys.readouterr().out
    holding = [o.key for o in overview.objects if TOPIC in o.topics]
    assert len(holding) == 3 and all(key in table for key in holding)
    assert shared.object_key not in table, "--topic lists the objects holding that topic"
    assert human_bytes(events.size_on_object_storage) in table
    assert f"{OTHER}-0" not in table

    # Everything merged: the topic holds no object; the emptied ones await the collector.
    for partition in (1, 2):
        merge_partition(
            world.coordinator, world.store, world.rsm, world.objects, TOPIC_ID, partition,
            world.options(), owner="t", clock=lambda: NOW,
        )  # fmt: skip
    overview = describe(world.coordinator, world.store, topic_id=TOPIC_ID)
    (events,) = overview.topics
    assert (events.size_on_object_storage, events.objects) == (0, 0)
    assert overview.awaiting_deletion == 3
    assert overview.awaiting_deletion_bytes == sum(o.total_size for o in objects[:3])
    collect_garbage(world.coordinator, world.objects, now_ms=NOW * 2, uncommitted_grace_ms=0)
    assert describe(world.coordinator, world.store).awaiting_deletion == 0


def shared_total(world: Consolidated, key: str) -> int:
    found = world.coordinator.wal_object(key)
    assert found is not None and found.total_size > HEADER_SIZE
    return found.total_size
