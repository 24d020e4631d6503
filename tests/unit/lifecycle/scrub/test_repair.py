"""The scrubber's repair copies a damaged segment again only from a local segment with the same
bytes, and deletes the damaged one only once the new copy is FINISHED.

Oracles: the broker's local ``.log`` file (what the new copy must read back as), and which
segment was damaged by hand. Every other case must leave the store and the bucket untouched.
"""

from __future__ import annotations

import itertools
import zlib
from pathlib import Path

import pytest
from kafka.record._crc32c import crc as kafka_crc32c
from sqlalchemy import update

from tests.support.scrub_finding import flip_log_object, local_file, run_scrub, tier_everything
from tests.support.tiered import Tiered, build_tiered
from tierflow.lifecycle.scrub.repair import Repair, RepairAction, RepairRun, repair_findings
from tierflow.metadata.events import EventEntity
from tierflow.metadata.models import BROKER_COPIER, RemoteLogSegment
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.segment_refs import remote_segment

LAYOUTS = ("plain", "chunked-encrypted")


def tiered(tmp_path: Path, layout: str = "plain") -> Tiered:
    t = build_tiered(tmp_path, layout=layout)
    tier_everything(t)
    return t


def check(t: Tiered) -> list[str]:
    return [s.segment_id for s in run_scrub(t).findings]


def repair(t: Tiered, *, dry_run: bool) -> list[Repair]:
    ticks = itertools.count(5_000)
    logs = {(log_.topic, log_.partition): log_ for log_ in t.logs()}
    run = RepairRun(
        actor="test",
        clock_ms=lambda: next(ticks),
        local_log=lambda topic, partition: logs.get((topic, partition)),
        dry_run=dry_run,
    )
    return repair_findings(t.store, t.rsm, run)


def damaged_one(t: Tiered) -> RemoteLogSegment:
    """A copied segment, damaged and found by a scrub."""
    row = t.store.scrub_queue(limit=10_000)[0]
    flip_log_object(t, row.segment_id)
    assert check(t) == [row.segment_id]
    return row


def snapshot(t: Tiered) -> tuple:
    """Everything a repair may change: every row's state, and the bucket's files."""
    rows = sorted(
        (r.segment_id, r.state)
        for log_ in t.logs()
        for r in t.store.segments(t.store.topic(log_.topic).topic_id, log_.partition)
    )
    files = sorted(str(p.relative_to(t.bucket())) for p in t.bucket().rglob("*") if p.is_file())
    return rows, files


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_damaged_segment_is_copied_again_from_the_identical_local_one(
    tmp_path: Path, layout: str
) -> None:
    t = tiered(tmp_path, layout)
    row = damaged_one(t)
    before = snapshot(t)
    (planned,) = repair(t, dry_run=True)
    assert (planned.segment_id, planned.action, planned.dry_run) == (
        row.segment_id,
        RepairAction.RECOPIED,
        True,
    )
    assert snapshot(t) == before, "a dry run changes nothing"

    (done,) = repair(t, dry_run=False)
    assert done.action is RepairAction.RECOPIED and done.replacement is not None
    assert t.store.segment(row.segment_id).state == S.DELETE_SEGMENT_FINISHED
    new = t.store.segment(done.replacement)
    assert (new.state, new.start_offset, new.end_offset) == (
        S.COPY_SEGMENT_FINISHED,
        row.start_offset,
        row.end_offset,
    )
    topic = t.store.topic_by_id(row.topic_id)
    read_back = b"".join(t.rsm.iter_log_segment(remote_segment(topic, new)))
    assert read_back == local_file(t, row).read_bytes()
    assert t.store.open_findings() == []
    assert check(t) == [], "the next pass finds nothing"
    events = t.store.events(entity=EventEntity.SCRUB.value)
    assert [(e.to_state, e.details_dict.get("replacement")) for e in events] == [
        ("SCRUB_FINDING", None),
        ("SCRUB_REPAIRED", done.replacement),
    ]
    assert repair(t, dry_run=False) == [], "nothing left to repair"


def test_a_local_segment_that_differs_is_not_copied(tmp_path: Path) -> None:
    t = tiered(tmp_path)
    row = damaged_one(t)
    path = local_file(t, row)
    data = bytearray(path.read_bytes())
    data[-1] ^= 0x01
    path.write_bytes(bytes(data))
    before = snapshot(t)
    (left,) = repair(t, dry_run=False)
    assert left.action is RepairAction.LEFT_OPEN
    assert str(path) in left.detail and "differs" in left.detail
    assert snapshot(t) == before
    assert [f.segment_id for f in t.store.open_findings()] == [row.segment_id]


def test_a_segment_the_broker_no_longer_holds_stays_open(tmp_path: Path) -> None:
    """Gone with the segments before it, as the broker's retention deletes them."""
    t = tiered(tmp_path)
    row = damaged_one(t)
    gone = local_file(t, row)
    for path in gone.parent.glob("*.log"):  # the broker's retention: oldest first, up to it
        if path.name <= gone.name:
            for file in path.parent.glob(f"{path.stem}.*"):
                file.unlink()
    before = snapshot(t)
    (left,) = repair(t, dry_run=False)
    assert (left.action, left.detail) == (
        RepairAction.LEFT_OPEN,
        f"no local segment holds exactly offsets {row.start_offset}-{row.end_offset} any more",
    )
    assert snapshot(t) == before


def test_a_segment_the_brokers_own_is_only_reported(tmp_path: Path) -> None:
    t = tiered(tmp_path)
    row = damaged_one(t)
    t.store.set_copier(row.topic_id, BROKER_COPIER, actor="test", now_ms=2_000)
    before = snapshot(t)
    (reported,) = repair(t, dry_run=False)
    assert reported.action is RepairAction.REPORTED
    assert snapshot(t) == before, "tierflow never copies what the brokers own"


def recorded_as_before(t: Tiered, row: RemoteLogSegment, **crcs: int | None) -> None:
    """The row's CRCs set by hand, as a row migrated from an older revision reads."""
    with t.store.engine.begin() as connection:
        connection.execute(
            update(RemoteLogSegment)
            .where(RemoteLogSegment.segment_id == row.segment_id)  # type: ignore[arg-type]
            .values(**crcs)
        )


def test_every_copy_records_the_crc32c_of_its_local_log(tmp_path: Path) -> None:
    """Oracle: kafka-python's pure-Python CRC-32C over the broker's file."""
    t = tiered(tmp_path)
    rows = t.store.scrub_queue(limit=10_000)
    assert rows
    for row in rows:
        assert row.log_crc32c == kafka_crc32c(local_file(t, row).read_bytes()), row.segment_id
        assert row.log_crc32 is None


def test_a_segment_copied_before_its_crc_was_recorded_stays_open(tmp_path: Path) -> None:
    t = tiered(tmp_path)
    row = damaged_one(t)
    recorded_as_before(t, row, log_crc32c=None, log_crc32=None)  # before 0010
    before = snapshot(t)
    (left,) = repair(t, dry_run=False)
    assert left.action is RepairAction.LEFT_OPEN and "no CRC-32" in left.detail
    assert snapshot(t) == before


def test_a_segment_copied_with_a_crc32_before_0011_is_repaired(tmp_path: Path) -> None:
    t = tiered(tmp_path)
    row = damaged_one(t)
    local = local_file(t, row).read_bytes()
    recorded_as_before(t, row, log_crc32c=None, log_crc32=zlib.crc32(local))
    (done,) = repair(t, dry_run=False)
    assert done.action is RepairAction.RECOPIED and done.replacement is not None
    new = t.store.segment(done.replacement)
    assert new.log_crc32c == kafka_crc32c(local)


def test_a_crc32_before_0011_that_differs_is_left_open(tmp_path: Path) -> None:
    t = tiered(tmp_path)
    row = damaged_one(t)
    local = local_file(t, row).read_bytes()
    recorded_as_before(t, row, log_crc32c=None, log_crc32=zlib.crc32(local) ^ 1)
    before = snapshot(t)
    (left,) = repair(t, dry_run=False)
    assert left.action is RepairAction.LEFT_OPEN
    assert "differs from what was copied" in left.detail and "CRC-32 " in left.detail
    assert snapshot(t) == before


def test_a_middle_segment_removed_by_hand_is_not_taken_from_its_neighbour(tmp_path: Path) -> None:
    """The segment before the gap seems to run up to the one after it; it holds none of the
    damaged offsets, and is not mistaken for their copy."""
    t = tiered(tmp_path)
    row = next(r for r in t.store.scrub_queue(limit=10_000) if r.start_offset > 0)
    flip_log_object(t, row.segment_id)
    assert check(t) == [row.segment_id]
    local_file(t, row).unlink()
    (left,) = repair(t, dry_run=False)
    assert (left.action, left.detail) == (
        RepairAction.LEFT_OPEN,
        f"no local segment holds exactly offsets {row.start_offset}-{row.end_offset} any more",
    )
