"""The merge on S3 (moto_server): WAL objects read by ranged GETs, merged segments written in
the chunked layout, emptied WAL objects collected; only the merged segments' objects remain."""

from __future__ import annotations

from pathlib import Path

from tests.diskless.diskless_support import NOW, TOPIC_ID
from tests.diskless.merge_support import (
    GRACE_MS,
    PARTITIONS,
    assert_merged_exactly_once,
    consolidated,
)
from tests.support.moto_server import MotoServer
from tierflow.diskless.gc import collect_garbage
from tierflow.diskless.merge import merge_partition
from tierflow.metadata.states import RemoteLogSegmentState as S


def test_merge_and_collect_on_s3(tmp_path: Path, s3_bucket: str, moto_server: MotoServer) -> None:
    world = consolidated(tmp_path, objects=2, remote_storage=f"s3://{s3_bucket}/cluster-a")
    before = {p: world.read_all(p) for p in range(PARTITIONS)}
    for partition in range(PARTITIONS):
        merge_partition(
            world.coordinator, world.store, world.rsm, world.objects, TOPIC_ID, partition,
            world.options(), owner="s3", clock=lambda: NOW,
        )  # fmt: skip
    assert_merged_exactly_once(world, before)
    collect_garbage(
        world.coordinator, world.objects, now_ms=NOW + GRACE_MS, uncommitted_grace_ms=GRACE_MS
    )
    listed = moto_server.client().list_objects_v2(Bucket=s3_bucket)["Contents"]
    expected = {
        f"cluster-a/{o.key}"
        for p in range(PARTITIONS)
        for row in world.store.segments(TOPIC_ID, p, states=[S.COPY_SEGMENT_FINISHED])
        for o in world.store.segment_objects(row.segment_id)
    }
    assert {o["Key"] for o in listed} == expected and expected
    assert [world.read_all(p) for p in range(PARTITIONS)] == list(before.values())
