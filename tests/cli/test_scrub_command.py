"""``tierflow scrub`` from a shell: a run SIGKILLed mid-scrub is resumed by the next, a
damaged object is one line on stderr and exit status 1, and ``--repair --apply`` SIGKILLed at
any step ends, after a rerun, as one that was never interrupted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.scrub_finding import flip_log_object, local_file
from tests.support.tiered import Tiered, build_tiered
from tierflow.config import Settings
from tierflow.faults import ENV_CRASH_AT, ENV_CRASH_SIGNAL, ENV_CRASH_TRACE
from tierflow.lifecycle.copy.steps import copy_partition
from tierflow.metadata.models import RemoteLogSegment
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.segment_refs import remote_segment

RUN_TIMEOUT_S = 180


def tierflow(
    settings: Settings, *argv: str, crash_at: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **settings.as_env()}
    for name in (ENV_CRASH_AT, ENV_CRASH_SIGNAL, ENV_CRASH_TRACE):
        env.pop(name, None)
    if crash_at:
        env[ENV_CRASH_AT] = crash_at
    command = [sys.executable, "-m", "tierflow.cli", *argv]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)


@pytest.fixture
def tiered(tmp_path: Path) -> Tiered:
    t = build_tiered(tmp_path, layout="chunked-encrypted")
    for log_ in t.logs():
        copy_partition(log_, t.store, t.rsm, owner="test")
    return t


def checked(t: Tiered) -> set[str]:
    every = [r.segment_id for r in t.store.scrub_queue(limit=10_000)]
    return {s for s in every if t.store.scrub_of(s) is not None}


def test_a_run_killed_mid_scrub_is_resumed_by_the_next(tiered: Tiered) -> None:
    every = [r.segment_id for r in tiered.store.scrub_queue(limit=10_000)]
    killed = tierflow(tiered.settings, "scrub", crash_at="scrub.after_verdict#2")
    assert killed.returncode == -9, killed.stderr
    done = checked(tiered)
    assert len(done) == 2, "each verdict is recorded before the next segment"
    rerun = tierflow(tiered.settings, "scrub", "--json")
    assert rerun.returncode == 0, rerun.stderr
    order = [s["segment_id"] for s in json.loads(rerun.stdout)["segments"]]
    assert set(order[: len(every) - 2]) == set(every) - done, "the rest first"
    assert set(order) == set(every)


def test_a_damaged_object_is_one_line_and_exit_1(tiered: Tiered) -> None:
    victim = tiered.store.scrub_queue(limit=1)[0].segment_id
    (key,) = [o.key for o in tiered.store.segment_objects(victim) if o.kind == "log"]
    path = tiered.bucket() / key
    path.write_bytes(path.read_bytes()[:-1])
    result = tierflow(tiered.settings, "scrub")
    assert result.returncode == 1
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"tierflow: scrub: {key}: ") and victim in line
    assert "1 finding" in result.stdout


def damage_one(t: Tiered) -> RemoteLogSegment:
    row = t.store.scrub_queue(limit=1)[0]
    flip_log_object(t, row.segment_id)
    assert tierflow(t.settings, "scrub").returncode == 1
    return row


def test_repair_is_a_dry_run_unless_applied(tiered: Tiered) -> None:
    row = damage_one(tiered)
    dry = tierflow(tiered.settings, "scrub", "--repair")
    assert dry.returncode == 1, dry.stderr
    assert f"segment {row.segment_id}: would be recopied: would copy it again from " in dry.stdout
    assert tiered.store.segment(row.segment_id).state == S.COPY_SEGMENT_FINISHED
    applied = tierflow(tiered.settings, "scrub", "--repair", "--apply", "--json")
    assert applied.returncode == 0, applied.stderr
    (done,) = json.loads(applied.stdout)
    assert (done["segment_id"], done["action"], done["dry_run"]) == (
        row.segment_id,
        "recopied",
        False,
    )


# Every step of a repair a kill can fall between: the new copy's start, its upload, its FINISHED,
# the repair's own record, and the damaged copy's delete.
REPAIR_KILLS = (
    "copy.after_started",
    "copy.mid_pass",
    "copy.after_finished",
    "repair.after_recopy",
    "delete.after_started",
)


@pytest.mark.parametrize("point", REPAIR_KILLS)
def test_a_repair_killed_anywhere_ends_as_an_uninterrupted_one(tiered: Tiered, point: str) -> None:
    row = damage_one(tiered)
    killed = tierflow(tiered.settings, "scrub", "--repair", "--apply", crash_at=point)
    assert killed.returncode == -9, killed.stderr
    rerun = tierflow(tiered.settings, "scrub", "--repair", "--apply")
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert tiered.store.segment(row.segment_id).state == S.DELETE_SEGMENT_FINISHED
    finished = tiered.store.segments(row.topic_id, row.partition, states=[S.COPY_SEGMENT_FINISHED])
    (new,) = [
        r for r in finished if (r.start_offset, r.end_offset) == (row.start_offset, row.end_offset)
    ]
    topic = tiered.store.topic_by_id(row.topic_id)
    read_back = b"".join(tiered.rsm.iter_log_segment(remote_segment(topic, new)))
    assert read_back == local_file(tiered, row).read_bytes()
    assert stored_keys(tiered) == expected_keys(tiered), "no object left behind"
    assert tiered.store.open_findings() == []


def stored_keys(t: Tiered) -> set[str]:
    return {str(p.relative_to(t.bucket())) for p in t.bucket().rglob("*") if p.is_file()}


def expected_keys(t: Tiered) -> set[str]:
    """The objects of every segment not deleted: the bucket must hold these and no more."""
    keys = set()
    for log_ in t.logs():
        topic_id = t.store.topic(log_.topic).topic_id
        for r in t.store.segments(topic_id, log_.partition):
            if r.state != S.DELETE_SEGMENT_FINISHED:
                keys |= {o.key for o in t.store.segment_objects(r.segment_id)}
    return keys
