"""The scrubber on cloud buckets: S3 (moto_server), GCS (gcp-storage-emulator) and Azure
(Azurite). Objects are damaged through the bucket's own API, as an operator or a misfiring
lifecycle rule would, and each damaged object is found and named; the rest pass. The repair
copies again exactly the segments whose broker file is the same, and deletes their damaged
objects from the bucket."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.object_backends import cloud_bucket_url
from tests.support.scrub_finding import local_file, run_scrub, tier_everything
from tests.support.tiered import Tiered, build_tiered
from tierflow.lifecycle.scrub.repair import RepairAction, RepairRun, repair_findings
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.segment_refs import remote_segment
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
    t = tiered_on(tmp_path, request, backend, "scrub")
    victim = t.store.scrub_queue(limit=3)[-1].segment_id
    kind, harm = DAMAGE[damage]
    (key,) = [o.key for o in t.store.segment_objects(victim) if o.kind == kind]
    harm(settings_object_store(t.settings), key)
    report = run_scrub(t)
    assert [(f.segment_id, f.finding.key) for f in report.findings] == [(victim, key)]
    assert len(report.segments) == len(t.store.scrub_queue(limit=10_000))


@pytest.mark.parametrize("backend", ["s3", "azure"])
def test_two_logs_swapped_in_a_cloud_bucket_are_both_found(
    tmp_path: Path, request: pytest.FixtureRequest, backend: str
) -> None:
    t = tiered_on(tmp_path, request, backend, "scrub-swap")
    first, second = [r.segment_id for r in t.store.scrub_queue(limit=2)]
    (a,) = [o.key for o in t.store.segment_objects(first) if o.kind == "log"]
    (b,) = [o.key for o in t.store.segment_objects(second) if o.kind == "log"]
    objects = settings_object_store(t.settings)
    data_a, data_b = objects.read_range(a), objects.read_range(b)
    objects.put_bytes(a, data_b)
    objects.put_bytes(b, data_a)
    found = {f.segment_id: f.finding.key for f in run_scrub(t).findings}
    assert found == {first: a, second: b}


def tiered_on(tmp_path: Path, request: pytest.FixtureRequest, backend: str, bucket: str) -> Tiered:
    """Every partition tiered, chunked and encrypted, into a bucket of ``backend``."""
    t = build_tiered(
        tmp_path,
        layout="chunked-encrypted",
        remote_storage=cloud_bucket_url(request, backend, bucket),
    )
    tier_everything(t)
    return t


@pytest.mark.parametrize("backend", ["s3", "azure"])
def test_repair_on_a_cloud_bucket_recopies_exactly_what_it_may(
    tmp_path: Path, request: pytest.FixtureRequest, backend: str
) -> None:
    """Two damaged segments: one whose broker file is intact is copied again and its damaged
    objects deleted from the bucket; one whose broker file changed stays open, untouched."""
    t = tiered_on(tmp_path, request, backend, "scrub-repair")
    intact, changed = t.store.scrub_queue(limit=2)
    objects = settings_object_store(t.settings)
    for row in (intact, changed):
        (key,) = [o.key for o in t.store.segment_objects(row.segment_id) if o.kind == "log"]
        flipped(objects, key)
    changed_file = local_file(t, changed)
    data = bytearray(changed_file.read_bytes())
    data[-1] ^= 0x01  # the last record's headers count: still a batch, not the same bytes
    changed_file.write_bytes(bytes(data))
    assert {s.segment_id for s in run_scrub(t).findings} == {intact.segment_id, changed.segment_id}
    damaged_keys = [o.key for o in t.store.segment_objects(intact.segment_id)]
    kept_keys = [o.key for o in t.store.segment_objects(changed.segment_id)]

    logs = {(log_.topic, log_.partition): log_ for log_ in t.logs()}
    ticks = itertools.count(5_000)
    run = RepairRun("test", lambda: next(ticks), lambda *tp: logs.get(tp), dry_run=False)
    actions = {r.segment_id: r.action for r in repair_findings(t.store, t.rsm, run)}
    assert actions == {
        intact.segment_id: RepairAction.RECOPIED,
        changed.segment_id: RepairAction.LEFT_OPEN,
    }
    assert [objects.stat(k) for k in damaged_keys] == [None] * len(damaged_keys)
    assert all(objects.stat(k) is not None for k in kept_keys)
    (new,) = [
        r
        for r in t.store.segments(
            intact.topic_id, intact.partition, states=[S.COPY_SEGMENT_FINISHED]
        )
        if r.start_offset == intact.start_offset
    ]
    topic = t.store.topic_by_id(new.topic_id)
    read_back = b"".join(t.rsm.iter_log_segment(remote_segment(topic, new)))
    assert read_back == local_file(t, intact).read_bytes()
    assert [f.segment_id for f in t.store.open_findings()] == [changed.segment_id]
