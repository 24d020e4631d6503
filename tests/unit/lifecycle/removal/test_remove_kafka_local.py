"""Partition removal under TIERFLOW_STORAGE_LAYOUT=kafka-local: LocalTieredStorage's keys.

The removal task, run from the settings, deletes each segment's objects and then sweeps the
partition's own directory, ``kafka-tiered-storage/<topic>-<partition>-<topic id>/``: a stray
there goes, the other partitions' and topics' directories beside it stay.
"""

from __future__ import annotations

from pathlib import Path

from tests.partition_removal.support import objects
from tests.support.tiered import NOW_MS, build_tiered
from tierflow.lifecycle.copy.steps import copy_partition
from tierflow.lifecycle.removal.remove import mark_topic_deleted
from tierflow.metadata.states import RemotePartitionDeleteState as P
from tierflow.tasks.partition_removal import remove_one

ROOT = "kafka-tiered-storage/"


def test_removal_sweeps_the_partitions_own_directory(tmp_path: Path) -> None:
    t = build_tiered(tmp_path, storage_layout="kafka-local")
    for log_ in t.logs():
        copy_partition(log_, t.store, t.rsm, owner="copy", clock=lambda: NOW_MS)
    orders, payments = t.store.topic("orders").topic_id, t.store.topic("payments").topic_id
    stray = objects(t).put_bytes(f"{ROOT}orders-1-{orders}/x.log", b"orphan").key
    neighbour = objects(t).put_bytes(f"{ROOT}orders-10-{orders}/x.log", b"not 1's").key
    kept = set(objects(t).list(f"{ROOT}payments-0-{payments}/"))
    assert kept and list(objects(t).list(f"{ROOT}orders-0-{orders}/"))

    mark_topic_deleted(t.store, "orders", actor="test", now_ms=NOW_MS)
    reports = [
        remove_one(
            {"topic": "orders", "topic_id": orders, "partition": partition},
            dry_run=False,
            settings=t.settings,
        )
        for partition in (0, 1)
    ]

    assert [r["finished"] for r in reports] == [True, True]
    assert reports[1]["leftover_keys"] == [stray]
    for partition in (0, 1):
        job = t.store.partition_delete(orders, partition)
        assert job is not None and job.delete_state is P.DELETE_PARTITION_FINISHED
    assert set(objects(t).list(f"{ROOT}orders-")) == {neighbour}
    assert set(objects(t).list(f"{ROOT}payments-")) == kept
