"""A topic deleted by mistake: while TIERFLOW_REMOVAL_GRACE_S holds remote_partition_removal
back, its partitions are not due for removal and restore finds it under its Kafka name; once
the grace is over (or with the default 0) removal takes them."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.restored import assert_restored_as_written
from tests.support.settings_env import use_settings
from tests.support.tiered import build_tiered
from tierflow.cli import main
from tierflow.restore.request import restore_partition
from tierflow.tasks.partition_removal import list_pending_removals


def test_a_deleted_topic_is_restorable_within_the_removal_grace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = build_tiered(tmp_path)
    use_settings(monkeypatch, t.settings)
    assert main(["copy", "--owner", "test"]) == 0
    assert main(["delete-topic", "orders", "--yes"]) == 0
    held = t.settings.updated(removal_grace_s=3600)
    assert list_pending_removals(held) == [], "marked a moment ago: not due within the grace"
    for partition in (0, 1):
        restore_partition(
            t.store, t.rsm, topic="orders", partition=partition, log_dir=tmp_path / "restored"
        )
        assert_restored_as_written(t.store, t.log("orders", partition), tmp_path / "restored")
    due = list_pending_removals(t.settings.updated(removal_grace_s=0))
    assert sorted((job["topic"], job["partition"]) for job in due) == [("orders", 0), ("orders", 1)]
