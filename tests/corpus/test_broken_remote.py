"""Broken remote data: reads name the object key (and key id), return nothing partial, and
change nothing; a copy whose upload does not verify never becomes COPY_SEGMENT_FINISHED.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.corpus.state import Snapshot, finished_ranges, pattern, recorded_keys, snapshot
from tests.support.broken_remote import (
    PARTITION,
    TOPIC,
    first_segment,
    flip_log_chunk,
    fresh_reader,
    key_of,
    object_of,
)
from tests.support.tiered import Tiered, build_tiered, eligible
from tierflow.lifecycle.copy.finalize import finalize_copy
from tierflow.lifecycle.copy.plan import CopyFailedError
from tierflow.lifecycle.copy.prepare import CopyOwner, prepare_copy
from tierflow.lifecycle.copy.rewrite import rewrite_segment
from tierflow.lifecycle.copy.steps import copy_partition
from tierflow.lifecycle.copy.verify import verify_partition
from tierflow.metadata.errors import UnknownTopicError
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.read.fetch import FetchRequest, fetch_remote
from tierflow.rsm import RemoteResourceNotFoundError, RemoteSegment
from tierflow.runtime import open_storage
from tierflow.transform.errors import CorruptChunkError, DataKeyError, ManifestError
from tierflow.transform.keyring import KeyRing

ENCRYPTED = "chunked-encrypted"


# -- damages: each returns the Tiered to read through and the names the message must hold ---
# Reads go through a fresh storage manager (fresh_reader), as in another process: the one that
# copied keeps the manifests it wrote in memory and would not look at the damaged objects.
# flip_log_chunk, shared with the CLI tests, is in tests/support/broken_remote.py.


def corrupt_manifest(t: Tiered) -> tuple[Tiered, dict[str, object]]:
    path = object_of(t, first_segment(t), ".rsm-manifest")
    path.write_bytes(path.read_bytes()[:40])
    return fresh_reader(t), {"key": key_of(t, path)}


def foreign_key_ring(t: Tiered) -> tuple[Tiered, dict[str, object]]:
    """A reader whose key ring lacks the key the segments were written under."""
    ring = KeyRing.generate(t.settings.data_dir / "other-keys", "tierflow-other")
    settings = t.settings.updated(keyring=ring.path)
    path = object_of(t, first_segment(t), ".rsm-manifest")
    reader = dataclasses.replace(t, settings=settings, rsm=open_storage(settings))
    return reader, {"key": key_of(t, path), "key_id": "tierflow-test-1"}


def remove_log_object(t: Tiered) -> tuple[Tiered, dict[str, object]]:
    path = object_of(t, first_segment(t), ".log")
    path.unlink()
    return fresh_reader(t), {"key": key_of(t, path)}


def nothing(t: Tiered) -> tuple[Tiered, dict[str, object]]:
    return fresh_reader(t), {}


def fetch_first(t: Tiered) -> object:
    return fetch_remote(t.store, t.rsm, FetchRequest(TOPIC, PARTITION, offset=0))


def fetch_unknown(t: Tiered) -> object:
    return fetch_remote(t.store, t.rsm, FetchRequest("no-such-topic", PARTITION, offset=0))


def verify_first(t: Tiered) -> object:
    log_ = t.log(TOPIC, PARTITION)
    return verify_partition(log_, t.store.topic(TOPIC), t.store, t.rsm)


def stream_first(t: Tiered) -> object:
    """The whole-segment stream must fail before it yields a single (plaintext) byte."""
    return next(iter(t.rsm.iter_log_segment(first_segment(t))))


@dataclass(frozen=True)
class ReadCase:
    name: str
    layout: str
    damage: Callable[[Tiered], tuple[Tiered, dict[str, object]]]
    run: Callable[[Tiered], object]
    error: type[Exception]
    message: str


READ_CASES = [
    ReadCase(
        "corrupt manifest: fetch",
        ENCRYPTED,
        corrupt_manifest,
        fetch_first,
        ManifestError,
        r"$key: ",
    ),
    ReadCase(
        "corrupt manifest: verify",
        ENCRYPTED,
        corrupt_manifest,
        verify_first,
        ManifestError,
        r"$key: ",
    ),
    ReadCase(
        "wrong key ring: fetch",
        ENCRYPTED,
        foreign_key_ring,
        fetch_first,
        DataKeyError,
        r"$key: .*key id '$key_id' is not in the key ring",
    ),
    ReadCase(
        "wrong key ring: stream",
        ENCRYPTED,
        foreign_key_ring,
        stream_first,
        DataKeyError,
        r"$key: .*key id '$key_id' is not in the key ring",
    ),
    ReadCase(
        "bit flip in an encrypted chunk: fetch",
        ENCRYPTED,
        flip_log_chunk,
        fetch_first,
        CorruptChunkError,
        r"$key: chunk 0: AES-GCM tag mismatch",
    ),
    ReadCase(
        "bit flip in an encrypted chunk: verify",
        ENCRYPTED,
        flip_log_chunk,
        verify_first,
        CorruptChunkError,
        r"$key: chunk 0: AES-GCM tag mismatch",
    ),
    ReadCase(
        "log object missing: fetch",
        "plain",
        remove_log_object,
        fetch_first,
        RemoteResourceNotFoundError,
        r"$key",
    ),
    ReadCase(
        "unknown topic: fetch",
        "plain",
        nothing,
        fetch_unknown,
        UnknownTopicError,
        r"unknown topic 'no-such-topic'",
    ),
]


def tier_all(base: Path, layout: str) -> Tiered:
    t = build_tiered(base, layout=layout)
    for log_ in t.logs():
        copy_partition(log_, t.store, t.rsm, owner="corpus")
    return t


@pytest.mark.parametrize("case", READ_CASES, ids=lambda c: c.name)
def test_broken_remote_read(tmp_path: Path, case: ReadCase) -> None:
    t = tier_all(tmp_path, case.layout)
    reader, names = case.damage(t)
    before = snapshot(t)

    with pytest.raises(case.error) as caught:
        case.run(reader)

    assert re.search(pattern(case.message, names), str(caught.value)), str(caught.value)
    assert snapshot(t) == before


# -- uploads that do not verify: finalize must clean them up ----------------------------------


def flip_uploaded_log(t: Tiered, segment: RemoteSegment) -> str:
    path = object_of(t, segment, ".log")
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    return key_of(t, path)


def truncate_uploaded_log(t: Tiered, segment: RemoteSegment) -> str:
    path = object_of(t, segment, ".log")
    path.write_bytes(path.read_bytes()[:-7])
    return key_of(t, path)


def remove_uploaded_index(t: Tiered, segment: RemoteSegment) -> str:
    suffix = ".index" if t.layout == "plain" else ".indexes"
    path = object_of(t, segment, suffix)
    path.unlink()
    return key_of(t, path)


def corrupt_uploaded_manifest(t: Tiered, segment: RemoteSegment) -> str:
    path = object_of(t, segment, ".rsm-manifest")
    path.write_bytes(b"{}")
    return key_of(t, path)


@dataclass(frozen=True)
class UploadCase:
    name: str
    layout: str
    damage: Callable[[Tiered, RemoteSegment], str]
    message: str


UPLOAD_CASES = [
    UploadCase("uploaded .log bit flip", "plain", flip_uploaded_log, r"$key: sha256 [0-9a-f]+"),
    UploadCase(
        "uploaded .log truncated",
        ENCRYPTED,
        truncate_uploaded_log,
        r"$key: size \d+ bytes, uploaded \d+ bytes",
    ),
    UploadCase(
        "uploaded index missing", "plain", remove_uploaded_index, r"$key: missing \(uploaded"
    ),
    UploadCase(
        "uploaded manifest replaced", ENCRYPTED, corrupt_uploaded_manifest, r"$key: size \d+"
    ),
]


def assert_cleaned(t: Tiered, segment_ids: list[str], kept: int, before: Snapshot) -> None:
    """The first ``kept`` jobs are FINISHED; the rest went through DELETE to DELETE_FINISHED."""
    for index, segment_id in enumerate(segment_ids):
        events = [(e.from_state, e.to_state) for e in t.store.events(segment_id=segment_id)]
        if index < kept:
            assert events[-1] == (S.COPY_SEGMENT_STARTED, S.COPY_SEGMENT_FINISHED)
            continue
        assert S.COPY_SEGMENT_FINISHED not in [to for _, to in events], events
        assert t.store.segment(segment_id).state == S.DELETE_SEGMENT_FINISHED
    assert set(t.rsm.objects.list()) == recorded_keys(t)
    assert snapshot(t).local == before.local


@pytest.mark.parametrize("case", UPLOAD_CASES, ids=lambda c: c.name)
def test_upload_that_does_not_verify(tmp_path: Path, case: UploadCase) -> None:
    t = build_tiered(tmp_path, layout=case.layout)
    log_ = t.log(TOPIC, PARTITION)
    before = snapshot(t)
    plan = prepare_copy(log_, t.store, rsm=t.rsm, owner=CopyOwner("corpus"))
    results = {job.segment_id: rewrite_segment(job, t.rsm) for job in plan.jobs}
    key = case.damage(t, plan.jobs[1].segment)

    with pytest.raises(CopyFailedError) as caught:
        finalize_copy(plan, results, t.store, t.rsm, owner="corpus")

    message = str(caught.value)
    assert re.search(pattern(case.message, {"key": key}), message), message
    assert plan.jobs[1].segment.describe() in message
    assert_cleaned(t, [job.segment_id for job in plan.jobs], 1, before)
    assert t.store.partition(t.store.topic(TOPIC).topic_id, PARTITION).lease_owner is None

    copy_partition(log_, t.store, t.rsm, owner="corpus")  # the rerun completes the copy
    assert finished_ranges(t, TOPIC, PARTITION) == eligible(log_)
    assert set(t.rsm.objects.list()) == recorded_keys(t)


@pytest.mark.parametrize("layout", ["plain", ENCRYPTED])
def test_local_file_gone_before_the_upload(tmp_path: Path, layout: str) -> None:
    """The broker's local retention removed a file between prepare and rewrite: the upload
    fails naming the file, what was already uploaded is deleted, nothing is FINISHED."""
    t = build_tiered(tmp_path, layout=layout)
    log_ = t.log(TOPIC, PARTITION)
    before = snapshot(t)
    plan = prepare_copy(log_, t.store, rsm=t.rsm, owner=CopyOwner("corpus"))
    gone = plan.jobs[1].data.time_index
    saved = gone.read_bytes()
    gone.unlink()
    results = {job.segment_id: rewrite_segment(job, t.rsm) for job in plan.jobs}

    with pytest.raises(CopyFailedError) as caught:
        finalize_copy(plan, results, t.store, t.rsm, owner="corpus")

    message = str(caught.value)
    assert plan.jobs[1].segment.describe() in message and str(gone) in message, message
    gone.write_bytes(saved)
    assert_cleaned(t, [job.segment_id for job in plan.jobs], 1, before)
    copy_partition(log_, t.store, t.rsm, owner="corpus")
    assert finished_ranges(t, TOPIC, PARTITION) == eligible(log_)
    assert set(t.rsm.objects.list()) == recorded_keys(t)
