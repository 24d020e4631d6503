"""WAL objects go through the same storage backends as tiered segments: here S3 (moto_server),
under a prefix, written by the writer and read back by ranged GETs, then collected."""

from __future__ import annotations

from pathlib import Path

from tests.diskless.diskless_support import NOW, TOPIC, TOPIC_ID, make_env, producer_batch_bytes
from tests.support.moto_server import MotoServer
from tierflow.diskless.gc import collect_garbage
from tierflow.diskless.retention import enforce_retention
from tierflow.read.diskless import fetch_diskless
from tierflow.storage.factory import open_object_store


def test_produce_fetch_and_collect_on_s3(
    tmp_path: Path, s3_bucket: str, moto_server: MotoServer
) -> None:
    env = make_env(f"sqlite:///{tmp_path / 'm.db'}", tmp_path / "unused", retention_ms=1)
    env.objects = open_object_store(f"s3://{s3_bucket}/cluster-a")
    writer = env.writer(storage_prefix="wal-prefix")
    sent = [producer_batch_bytes(f"s3-{i}", 2) for i in range(5)]
    for data in sent:
        writer.append(TOPIC_ID, 0, data)
    flushed = writer.flush()
    assert flushed is not None and flushed.object_key.startswith("wal-prefix/diskless/wal/")
    listed = moto_server.client().list_objects_v2(Bucket=s3_bucket)["Contents"]
    assert [o["Key"] for o in listed] == [f"cluster-a/{flushed.object_key}"]
    fetched = fetch_diskless(env.coordinator, env.objects, TOPIC, 0, 0)
    assert fetched.ranged_gets == 1 and len(fetched.batches) == 5
    assert [b[16:] for b in fetched.batches] == [d[16:] for d in sent]
    enforce_retention(env.coordinator, now_ms=NOW + 10_000, delete_grace_ms=0)
    report = collect_garbage(
        env.coordinator, env.objects, now_ms=NOW + 10_000, uncommitted_grace_ms=60_000
    )
    assert report.deleted == [flushed.object_key]
    assert "Contents" not in moto_server.client().list_objects_v2(Bucket=s3_bucket)
