"""The diskless_gc DAG run by Airflow itself (dag.test): retention over the WAL, then the
collector deleting objects emptied longer than the grace period and uncommitted garbage, and
nothing that is still within its grace period."""

from __future__ import annotations

from pathlib import Path

import pytest

from dev.airflow_local import run_dag_in_subprocess
from tests.diskless.diskless_support import TOPIC_ID, producer_batch_bytes
from tests.diskless.merge_support import GRACE_MS, PARTITIONS, bucket_files, consolidated
from tierflow.diskless.merge import merge_partition
from tierflow.diskless.models import WalObjectState
from tierflow.diskless.writer import WalWriter
from tierflow.lifecycle.clock import wall_clock_ms
from tierflow.storage.wal_keys import new_wal_object_key

pytestmark = [pytest.mark.airflow, pytest.mark.slow]

PROJECT = Path(__file__).resolve().parents[2]
OLD_TOPIC, OLD_TOPIC_ID = "old-logs", "o2Dq7iPXQfSdD0wL4RZ0NA"
UNCOMMITTED_GRACE_MS = 600_000


def test_gc_deletes_what_is_due_and_keeps_what_is_within_its_grace(tmp_path: Path) -> None:
    now = wall_clock_ms()
    world = consolidated(tmp_path / "data", objects=2, committed_at=now - 10 * GRACE_MS)
    before = [world.read_all(p) for p in range(PARTITIONS)]
    # Merged long enough ago that the emptied objects are past their grace period.
    for partition in range(PARTITIONS):
        merge_partition(
            world.coordinator,
            world.store,
            world.rsm,
            world.objects,
            TOPIC_ID,
            partition,
            world.options(),
            owner="test",
            clock=lambda: now - 2 * GRACE_MS,
        )
    merged = {o.object_key for o in world.coordinator.wal_objects()}
    # A writer that uploaded and died before committing, long ago.
    lost = new_wal_object_key("")
    data = b"\x00" + producer_batch_bytes("lost", 2)
    world.coordinator.register_object(
        lost, len(data), writer="dead", now_ms=now - UNCOMMITTED_GRACE_MS - 1000
    )
    world.objects.put_bytes(lost, data)
    # A topic whose one batch is past retention.ms: retention empties its object now.
    world.store.register_topic(OLD_TOPIC, OLD_TOPIC_ID, actor="t", now_ms=now, retention_ms=60_000)
    world.coordinator.register_topic(OLD_TOPIC_ID, 1, now_ms=now)
    writer = WalWriter(
        world.coordinator, world.objects, buffer_max_bytes=1 << 20, commit_interval_ms=0
    )
    writer.append(OLD_TOPIC_ID, 0, producer_batch_bytes("old", 3, timestamp=now - 3_600_000))
    expired = writer.flush()
    assert expired is not None and merged and lost in bucket_files(world)

    env = {
        **world.settings.as_env(),
        "TIERFLOW_DISKLESS_DELETE_GRACE_MS": str(GRACE_MS),
        "TIERFLOW_DISKLESS_UNCOMMITTED_GRACE_MS": str(UNCOMMITTED_GRACE_MS),
    }
    state = run_dag_in_subprocess(
        "diskless_gc",
        project=PROJECT,
        airflow_home=tmp_path / "airflow",
        extra_env=env,
        log_file=tmp_path / "gc.log",
    )
    assert state == "success"
    files = bucket_files(world)
    assert not merged & files and lost not in files, "due objects deleted from storage"
    left = world.coordinator.wal_objects()
    assert [o.object_key for o in left] == [expired.object_key], "and their rows dropped"
    assert left[0].state == WalObjectState.DELETING.value and left[0].used_size == 0
    assert expired.object_key in files, "emptied by retention just now: within its grace"
    old = world.coordinator.log(OLD_TOPIC_ID, 0)
    assert old.log_start_offset == old.high_watermark == 3
    log_text = (tmp_path / "gc.log").read_text()
    assert f"deleted {len(merged) + 1} WAL objects" in log_text
    assert "1 of them never committed" in log_text
    assert [world.read_all(p) for p in range(PARTITIONS)] == before, "read from tiered segments"
