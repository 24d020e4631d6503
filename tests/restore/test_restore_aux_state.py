"""A replica rebuilt as Kafka's follower rebuilds it (``buildRemoteLogAuxState``): its local log
starts where a remote segment ends, and the restore writes only the producer snapshot and the
leader-epoch entries there, as the leader uploaded them, reading no log data."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.settings_env import use_settings
from tests.support.tiered import Tiered, build_tiered
from tierflow.cli import main
from tierflow.kafka.leader_epoch import (
    LEADER_EPOCH_CHECKPOINT,
    entries_before,
    read_leader_epoch_checkpoint,
)
from tierflow.kafka.log_dir import LogDir
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.restore.aux_state import restore_aux_state
from tierflow.restore.plan import RestoreError


@pytest.fixture
def tiered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Tiered:
    t = build_tiered(tmp_path, layout="chunked-encrypted")
    use_settings(monkeypatch, t.settings)
    assert main(["copy", "--owner", "test"]) == 0
    return t


def follower_from(t: Tiered, replica: Path, *, keep_from: int) -> Path:
    """orders-0 as a follower holds it: the leader's segments from ``keep_from`` on, with no
    producer snapshot and no leader-epoch cache yet."""
    source = t.log("orders", 0).path
    target = replica / source.name
    shutil.copytree(source, target)
    for path in target.iterdir():
        stem = path.name.split(".")[0]
        if (stem.isdigit() and int(stem) < keep_from) or path.suffix == ".snapshot":
            path.unlink()
    (target / LEADER_EPOCH_CHECKPOINT).unlink()
    return target


def test_the_snapshot_and_epochs_at_the_local_start_are_the_leaders(
    tiered: Tiered, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log_ = tiered.log("orders", 0)
    topic_id = tiered.store.topic("orders").topic_id
    rows = tiered.store.segments(topic_id, 0, states=[S.COPY_SEGMENT_FINISHED])
    start = rows[1].end_offset + 1  # the follower's local log starts after two remote segments
    target = follower_from(tiered, tmp_path / "replica", keep_from=start)

    def no_log_data(*_args: object) -> None:
        raise AssertionError("a replica rebuild read log data")

    monkeypatch.setattr(tiered.rsm, "iter_log_segment", no_log_data)
    monkeypatch.setattr(tiered.rsm, "fetch_log_segment", no_log_data)
    (replica,) = LogDir(tmp_path / "replica").partitions()
    report = restore_aux_state(tiered.store, tiered.rsm, replica)
    assert report.local_start_offset == start
    snapshot = log_.producer_snapshot_path(start)
    assert (target / snapshot.name).read_bytes() == snapshot.read_bytes()
    original = read_leader_epoch_checkpoint(log_.path / LEADER_EPOCH_CHECKPOINT)
    rebuilt = read_leader_epoch_checkpoint(target / LEADER_EPOCH_CHECKPOINT)
    assert rebuilt == entries_before(original, start) and len(rebuilt) == report.leader_epochs


def test_a_local_start_inside_a_remote_segment_is_refused(tiered: Tiered, tmp_path: Path) -> None:
    topic_id = tiered.store.topic("orders").topic_id
    rows = tiered.store.segments(topic_id, 0, states=[S.COPY_SEGMENT_FINISHED])
    target = follower_from(tiered, tmp_path / "replica", keep_from=rows[1].end_offset + 1)
    first = sorted(target.glob("*.log"))[0]
    first.rename(first.with_name(f"{rows[1].end_offset - 5:020d}.log"))  # not a segment's end
    (replica,) = LogDir(tmp_path / "replica").partitions()
    with pytest.raises(RestoreError, match="no remote segment ends at offset"):
        restore_aux_state(tiered.store, tiered.rsm, replica)


def test_the_cli_rebuilds_every_partition_of_the_topic_under_to(
    tiered: Tiered, tmp_path: Path
) -> None:
    topic_id = tiered.store.topic("orders").topic_id
    rows = tiered.store.segments(topic_id, 0, states=[S.COPY_SEGMENT_FINISHED])
    follower_from(tiered, tmp_path / "replica", keep_from=rows[-1].end_offset + 1)
    env = {**os.environ, **tiered.settings.as_env()}
    command = [sys.executable, "-m", "tierflow.cli", "restore", "orders", "--aux-state-only"]
    done = subprocess.run(
        [*command, "--to", str(tmp_path / "replica")], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert f"orders-0: rebuilt from offset {rows[-1].end_offset + 1}" in done.stdout
