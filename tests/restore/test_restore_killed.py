"""``tierflow restore`` killed (a real SIGKILL) at each step boundary, then rerun as it was
given: the log dir ends byte-identical to an uninterrupted restore's (every file: segments,
indexes, snapshots, partition files, checkpoints), with no temporary or staging file left and
one event, whether the target was empty or held an earlier restore. The CLI's dry run and JSON
say what it does."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.corpus.damage import digest_tree
from tests.support.restored import assert_restored_as_written, earlier_restore
from tests.support.tiered import Tiered, copied_by_cli
from tierflow.faults import ENV_CRASH_AT
from tierflow.kafka.checkpoint import (
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_OFFSET_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    read_offset_checkpoint,
)
from tierflow.kafka.partition_metadata import PARTITION_METADATA, read_partition_metadata

pytestmark = pytest.mark.slow

KILL_POINTS = [  # (where, how many segments an earlier run had written by then)
    ("restore.before_log#1", 0),  # the first segment's indexes and snapshot staged, no .log
    ("restore.after_segment#1", 1),  # one segment staged
    ("restore.before_log#3", 2),  # two staged, the third's indexes written
    ("restore.before_partition_files", 3),  # every segment staged, no partition file
    ("restore.before_swap", 3),  # the partition staged whole, nothing moved
    ("restore.swap_begun", 3),  # the swap recorded in the replaced dir, nothing moved
    ("restore.after_aside", 3),  # the earlier restore moved aside, the target name free
    ("restore.after_swap", 3),  # the staged partition in place, no checkpoint line
    ("restore.before_event", 3),  # the checkpoint lines written, the restore not recorded
    ("restore.after_event", 3),  # recorded, the replaced dir not yet removed
]
# (target, the points tried on it): "after_aside" is reached only where there was content.
CASES = [
    *(("empty", point, n) for point, n in KILL_POINTS if point != "restore.after_aside"),
    *(("earlier restore", point, n) for point, n in KILL_POINTS[2:]),
]

# The root checkpoints a restore writes its partitions' lines into.
RESTORED_CHECKPOINTS = (
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_OFFSET_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
)


@pytest.fixture(scope="module")
def tiered(tmp_path_factory: pytest.TempPathFactory) -> Tiered:
    return copied_by_cli(tmp_path_factory.mktemp("tiered"))


def restore(t: Tiered, target: Path, *extra: str, crash_at: str | None = None):
    env = {**os.environ, **t.settings.as_env()}
    env.pop(ENV_CRASH_AT, None)
    if crash_at:
        env[ENV_CRASH_AT] = crash_at
    command = [sys.executable, "-m", "tierflow.cli", "restore", "orders", "--to", str(target)]
    return subprocess.run([*command, *extra], env=env, capture_output=True, text=True, timeout=120)


def restores_into(t: Tiered, target: Path) -> list:
    """The restore events of partitions written under ``target``."""
    events = t.store.events(topic_id=t.store.topic("orders").topic_id, entity="restore")
    return [e for e in events if json.loads(e.details)["directory"].startswith(str(target))]


@pytest.fixture(scope="module")
def uninterrupted(tiered: Tiered, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Each target's log dir after the same restore, not killed: every file's digest."""
    found = {}
    for target in ("empty", "earlier restore"):
        log_dir = tmp_path_factory.mktemp("uninterrupted")
        if target == "earlier restore":
            earlier_restore(tiered, log_dir)
        done = restore(tiered, log_dir, "--partition", "0")
        assert done.returncode == 0, done.stderr
        found[target] = digest_tree(log_dir)
    return found


@pytest.mark.parametrize(
    ("target", "kill_point", "complete"), CASES, ids=[f"{t}-{p}" for t, p, _ in CASES]
)
def test_a_killed_restore_rerun_ends_as_an_uninterrupted_one(
    tiered: Tiered, uninterrupted: dict, tmp_path: Path, target: str, kill_point: str, complete: int
) -> None:
    if target == "earlier restore":
        earlier_restore(tiered, tmp_path)
    killed = restore(tiered, tmp_path, "--partition", "0", crash_at=kill_point)
    assert killed.returncode == -signal.SIGKILL, killed.stdout + killed.stderr
    rerun = restore(tiered, tmp_path, "--partition", "0")
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert "orders-0: restored 3 segments" in rerun.stdout
    earlier = f"{complete} of them written by an earlier run"
    assert (earlier in rerun.stdout) == (complete > 0), rerun.stdout
    assert_restored_as_written(tiered.store, tiered.log("orders", 0), tmp_path)
    assert digest_tree(tmp_path) == uninterrupted[target], "every file as an uninterrupted run's"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []
    here = restores_into(tiered, tmp_path)
    assert len(here) == 1 + (target == "earlier restore"), "recorded once, by the run that ended"


def test_the_cli_dry_run_and_json(tiered: Tiered, tmp_path: Path) -> None:
    dry = restore(tiered, tmp_path, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "orders-0: would restore" in dry.stdout and "orders-1: would restore" in dry.stdout
    assert list(tmp_path.iterdir()) == []
    done = restore(tiered, tmp_path, "--json")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert [p["partition"] for p in document["partitions"]] == ["orders-0", "orders-1"]
    for log_ in (tiered.log("orders", 0), tiered.log("orders", 1)):
        assert_restored_as_written(tiered.store, log_, tmp_path)
    here = restores_into(tiered, tmp_path)
    assert [(e.partition, e.to_state) for e in here] == [(0, "RESTORED"), (1, "RESTORED")]
    assert json.loads(here[0].details)["directory"] == str(tmp_path / "orders-0")
    assert all(e.actor.startswith("cli:") for e in here), here
    refused = restore(tiered, tmp_path / "orders-0")  # a partition dir is not a log dir
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "orders-0: a partition directory; give the log dir" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_a_copy_under_a_new_name_sits_beside_the_live_topic(tiered: Tiered, tmp_path: Path) -> None:
    """Restored into the broker's own log dir as orders-copy: the new name and id everywhere,
    the original partitions and their checkpoint lines untouched."""
    log_dir = tiered.settings.log_dirs[0]
    before = {p: p.read_bytes() for p in log_dir.rglob("*") if p.is_file()}
    done = restore(tiered, log_dir, "--as-topic", "orders-copy", "--json")
    assert done.returncode == 0, done.stderr
    ids = {p["topic_id"] for p in json.loads(done.stdout)["partitions"]}
    (new_id,) = ids
    assert new_id != tiered.store.topic("orders").topic_id
    for p, data in before.items():
        if p.name not in RESTORED_CHECKPOINTS:
            assert p.read_bytes() == data, f"{p} changed"
    for partition in (0, 1):
        original = tiered.log("orders", partition)
        copy = log_dir / f"orders-copy-{partition}"
        assert read_partition_metadata(copy / PARTITION_METADATA) == new_id
        for log_file in copy.glob("*.log"):
            assert log_file.read_bytes() == (original.path / log_file.name).read_bytes()
        for name in RESTORED_CHECKPOINTS:
            now = read_offset_checkpoint(log_dir / name)
            (tmp_path / name).write_bytes(before[log_dir / name])
            was = read_offset_checkpoint(tmp_path / name)
            assert now[("orders", partition)] == was[("orders", partition)]
            assert ("orders-copy", partition) in now
    again = restore(tiered, log_dir, "--as-topic", "orders-copy", "--json")
    assert {p["topic_id"] for p in json.loads(again.stdout)["partitions"]} == ids, "stable id"
    bad = restore(tiered, log_dir, "--as-topic", "no/slash")
    assert bad.returncode == 2 and "no/slash" in bad.stderr, bad.stderr
