"""The scrubber on cloud buckets: S3 (moto_server), GCS (gcp-storage-emulator) and Azure
(Azurite). Objects are damaged through the bucket's own API, as an operator or a misfiring
lifecycle rule would, and each damaged object is found and named; the rest pass."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.object_backends import cloud_bucket_url
from tests.support.tiered import Tiered, build_tiered
from tierflow.lifecycle.copy.steps import copy_partition
from tierflow.lifecycle.scrub.run import ScrubRun, scrub
from tierflow.storage.factory import settings_object_store
from tierflow.storage.object_store import ObjectStore

pytestmark = [pytest.mark.slow]


def flipped(objects: ObjectStore, key: str) -> None:
    data = bytearray(objects.read_range(key))
    data[len(data) // 2] ^= 0x5A
    objects.put_bytes(key, bytes(data))


def truncated(objects: ObjectStore, key: str) -> None:
    objects.put_bytes(key, objects.read_range(key)[:-100])


def deleted(objects: ObjectStore, key: str) -> None:
    objects.delete([key])


DAMAGE: dict[str, tuple[str, Callable[[ObjectStore, str], None]]] = {
    "flipped log": ("log", flipped),
    "truncated indexes": ("indexes", truncated),
    "deleted manifest": ("rsm-manifest", deleted),
}


@pytest.mark.parametrize("backend", ["s3", "gcs", "azure"])
@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_object_in_a_cloud_bucket_is_found_and_named(
    tmp_path: Path, request: pytest.FixtureRequest, backend: str, damage: str
) -> None:
    t = build_tiered(
        tmp_path,
        layout="chunked-encrypted",
        remote_storage=cloud_bucket_url(request, backend, "scrub"),
    )
    for log_ in t.logs():
        copy_partition(log_, t.store, t.rsm, owner="test")
    victim = t.store.scrub_queue(limit=3)[-1].segment_id
    kind, harm = DAMAGE[damage]
    (key,) = [o.key for o in t.store.segment_objects(victim) if o.kind == kind]
    harm(settings_object_store(t.settings), key)
    report = _scrub(t)
    assert [(f.segment_id, f.finding.key) for f in report.findings] == [(victim, key)]
    assert len(report.segments) == len(t.store.scrub_queue(limit=10_000))


def _scrub(t: Tiered):
    ticks = itertools.count(1_000)
    run = ScrubRun(1 << 40, actor="test", clock_ms=lambda: next(ticks))
    return scrub(t.store, t.rsm, run)
