"""A local-directory bucket keeps the temporary file of an upload killed mid-write; reconcile
reports it as an orphan and deletes it once past the object grace, like any other orphan."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.reconcile.support import ACTOR, DAY_MS, HOUR_MS, objects
from tests.support.tiered import build_tiered
from tierflow.lifecycle.clock import wall_clock_ms
from tierflow.lifecycle.reconcile import (
    Action,
    FindingKind,
    ReconcileGrace,
    ReconcileScope,
    apply_reconcile,
    plan_reconcile,
)
from tierflow.storage.keys import partition_prefix

SIZE = 1 << 20
KILLED_UPLOAD = f"""
import os, signal, sys
from pathlib import Path
from tierflow.storage.local import LocalDirectoryObjectStore

def chunks():
    yield b"x" * {SIZE}  # larger than the write buffer: on disk before the kill
    os.kill(os.getpid(), signal.SIGKILL)  # killed mid-upload: no cleanup runs
    yield b"never"

LocalDirectoryObjectStore(Path(sys.argv[1])).put_chunks(sys.argv[2], chunks())
"""


def killed_upload(bucket: Path, key: str) -> Path:
    """Upload ``key`` in a process killed halfway; the temporary file it left behind."""
    done = subprocess.run([sys.executable, "-c", KILLED_UPLOAD, str(bucket), key], check=False)
    assert done.returncode == -9
    target = bucket / key
    (leftover,) = [p for p in target.parent.iterdir() if p.name.startswith(f".{target.name}.tmp-")]
    return leftover


def test_a_killed_uploads_temporary_file_is_an_orphan(tmp_path: Path) -> None:
    t = build_tiered(tmp_path)
    topic = t.store.topic("payments")
    where = partition_prefix(t.settings.storage.prefix, "payments", topic.topic_id, 0)
    key = f"{where}00000000000000000000-AAAAAAAAAAAAAAAAAAAAAA.log"
    leftover = killed_upload(t.bucket(), key)
    leftover_key = leftover.relative_to(t.bucket().resolve()).as_posix()
    old_s = (wall_clock_ms() - 3 * DAY_MS) / 1000
    os.utime(leftover, (old_s, old_s))

    def plan(grace_ms: int):
        return plan_reconcile(
            t.store,
            objects(t),
            ReconcileScope(t.settings.storage.prefix),
            ReconcileGrace(wall_clock_ms(), grace_ms, HOUR_MS),
        )

    young = [f for f in plan(4 * DAY_MS).findings if f.key == leftover_key]
    assert len(young) == 1 and not young[0].actionable, "within the grace: reported, kept"
    p = plan(DAY_MS)
    (finding,) = [f for f in p.findings if f.key == leftover_key]
    assert finding.kind is FindingKind.ORPHAN_OBJECT
    assert finding.action is Action.DELETE_OBJECT and finding.actionable
    assert finding.topic == "payments" and finding.partition == 0
    assert "killed" in finding.message and finding.size == SIZE

    apply_reconcile(p, t.store, t.rsm, objects(t), actor=ACTOR, now_ms=wall_clock_ms())
    assert not leftover.exists()
    assert not [f for f in plan(DAY_MS).findings if f.key == leftover_key]
