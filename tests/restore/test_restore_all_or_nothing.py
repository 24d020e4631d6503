"""A restore is all or nothing per partition. A corrupt object in the middle of a partition
fails it with one line naming the object and what is wrong, and leaves the log dir byte for
byte as it was, whether the partition was absent or held an earlier restore; other partitions
of the same restore are placed; once the object is repaired, a rerun restores it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.corpus.damage import digest_tree
from tests.support.restored import (
    assert_restored_as_written,
    earlier_restore,
    finished_rows,
    restore_events,
)
from tests.support.settings_env import use_settings
from tests.support.tiered import LAYOUTS, Tiered, build_tiered
from tierflow.cli import main
from tierflow.restore.plan import RestoreError
from tierflow.restore.request import RestoreRequest, run_restore


@pytest.fixture(params=sorted(LAYOUTS))
def tiered(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    t = build_tiered(tmp_path / "tiered", layout=request.param)
    use_settings(monkeypatch, t.settings)
    assert main(["copy", "--owner", "test"]) == 0
    return t


def corrupt_middle_log(t: Tiered) -> tuple[str, bytes]:
    """One byte flipped in the middle of orders-0's second segment's ``.log`` object (inside
    a chunk, in the chunked layout): its key and its bytes as they were."""
    row = finished_rows(t.store, t.log("orders", 0))[1]
    (obj,) = [o for o in t.store.segment_objects(row.segment_id) if o.key.endswith(".log")]
    path = t.bucket() / obj.key
    original = path.read_bytes()
    data = bytearray(original)
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    return obj.key, original


def entries(root: Path) -> list[str]:
    """Every file and directory under ``root``, hidden ones included."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.mark.parametrize("target", ["absent", "earlier restore"])
def test_a_corrupt_object_leaves_the_log_dir_as_it_was(
    tiered: Tiered, tmp_path: Path, capsys: pytest.CaptureFixture, target: str
) -> None:
    log_, log_dir = tiered.log("orders", 0), tmp_path / "restored"
    log_dir.mkdir()
    if target == "earlier restore":
        earlier_restore(tiered, log_dir)
    before, listed, events = digest_tree(log_dir), entries(log_dir), restore_events(tiered, log_)
    key, original = corrupt_middle_log(tiered)
    command = ["restore", "orders", "--partition", "0", "--to", str(log_dir)]
    capsys.readouterr()
    assert main(command) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if not line.startswith("restore: ")]
    assert len(lines) == 1 and lines[0].startswith("tierflow: error: "), err
    assert f"{key}: sha256 " in lines[0] and " differs from uploaded " in lines[0], lines[0]
    assert f"orders-0 not restored, {log_dir / 'orders-0'} left as it was" in lines[0]
    assert "Error:" not in lines[0] and "rerun" not in lines[0], "no class name, no false hope"
    assert (digest_tree(log_dir), entries(log_dir)) == (before, listed), "byte for byte"
    assert restore_events(tiered, log_) == events, "nothing recorded"
    (tiered.bucket() / key).write_bytes(original)  # repaired
    assert main(command) == 0
    assert_restored_as_written(tiered.store, log_, log_dir)
    assert restore_events(tiered, log_) == events + 1


def test_a_failed_partition_does_not_hold_back_the_others(tiered: Tiered, tmp_path: Path) -> None:
    log_dir = tmp_path / "restored"
    key, _ = corrupt_middle_log(tiered)
    with pytest.raises(RestoreError, match=f"{key}: sha256 .*; orders-0 not restored"):
        run_restore(tiered.store, tiered.rsm, RestoreRequest("orders", log_dir))
    assert_restored_as_written(tiered.store, tiered.log("orders", 1), log_dir)
    assert sorted(p.name for p in log_dir.iterdir() if p.is_dir()) == ["orders-1"]
    assert restore_events(tiered, tiered.log("orders", 0)) == 0
    assert restore_events(tiered, tiered.log("orders", 1)) == 1
