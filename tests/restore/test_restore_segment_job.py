"""The segment jobs a restore hands to Spark or writes itself: they travel as JSON, skip what a
previous run completed, and a segment that cannot be read fails its partition with one line
naming the object, with nothing of the partition in place."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.restored import assert_restored_as_written, finished_rows
from tests.support.settings_env import use_settings
from tests.support.tiered import Tiered, build_tiered
from tierflow.cli import main
from tierflow.restore.partition import prepare_partition
from tierflow.restore.plan import RestoreError
from tierflow.restore.request import RestoreRequest, restore_partition
from tierflow.restore.segment_job import RestoreSegmentJob, restore_segment


@pytest.fixture
def tiered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Tiered:
    t = build_tiered(tmp_path / "tiered", layout="chunked-encrypted")
    use_settings(monkeypatch, t.settings)
    assert main(["copy", "--owner", "test"]) == 0
    return t


def jobs_of(t: Tiered, target: Path, **cut: int) -> list[RestoreSegmentJob]:
    request = RestoreRequest("orders", target, to_offset=cut.get("to_offset"))
    prepared = prepare_partition(t.store, t.rsm, request, 0, None)
    return prepared.jobs()


def test_a_job_travels_as_json_and_a_complete_segment_is_skipped(
    tiered: Tiered, tmp_path: Path
) -> None:
    jobs = jobs_of(tiered, tmp_path, to_offset=700)
    assert [j.cut for j in jobs][:-1] == [None] and jobs[-1].cut is not None
    again = [RestoreSegmentJob(**json.loads(json.dumps(j.as_dict()))) for j in jobs]
    assert again == jobs
    assert [restore_segment(j, tiered.rsm)["written"] for j in again] == [True, True]
    assert [restore_segment(j, tiered.rsm)["written"] for j in again] == [False, False]
    assert jobs_of(tiered, tmp_path, to_offset=700) == [], "nothing left to write"


def test_a_segment_that_cannot_be_read_fails_the_restore_by_name(
    tiered: Tiered, tmp_path: Path
) -> None:
    log_ = tiered.log("orders", 0)
    middle = finished_rows(tiered.store, log_)[1]
    lost = {}
    for obj in tiered.store.segment_objects(middle.segment_id):
        if obj.key.endswith(".log"):
            lost[obj.key] = (tiered.bucket() / obj.key).read_bytes()
            (tiered.bucket() / obj.key).unlink()
    assert lost
    target = tmp_path / "restored"
    target.mkdir()
    with pytest.raises(RestoreError) as failed:
        restore_partition(tiered.store, tiered.rsm, topic="orders", partition=0, log_dir=target)
    message = str(failed.value)
    (key,) = lost
    assert f"{key}: missing (uploaded {len(lost[key])} bytes)" in message, message
    assert "orders-0 not restored" in message and "\n" not in message
    assert list(target.iterdir()) == [], "nothing placed, nothing staged"
    events = tiered.store.events(topic_id=tiered.store.topic("orders").topic_id, entity="restore")
    assert events == [], "a restore that did not finish is not recorded"
    for key, data in lost.items():  # the object is back: the rerun restores the partition
        (tiered.bucket() / key).write_bytes(data)
    report = restore_partition(
        tiered.store, tiered.rsm, topic="orders", partition=0, log_dir=target
    )
    assert (report.written_segments, report.already_restored) == (3, 0)
    assert_restored_as_written(tiered.store, log_, target)
