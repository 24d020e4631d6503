"""The diskless demo: the demo broker's logs, produced through shared WAL objects and read
back, equal the broker's segments byte for byte; merged into tiered segments and read back
again, still; and every emptied WAL object is collected."""

from __future__ import annotations

from pathlib import Path

from tierflow.cli import main
from tierflow.demo.diskless import run_diskless_demo


def test_the_demo_reads_back_the_broker_segments_byte_for_byte(tmp_path: Path) -> None:
    demo = run_diskless_demo(tmp_path / "demo")
    assert demo.ok, [c for c in demo.checks if not c.identical]
    assert {(c.topic, c.partition) for c in demo.checks} == {
        ("audit-log", 0),
        ("clickstream", 0),
        ("clickstream", 1),
    }
    assert all(c.batches > 100 for c in demo.checks)
    assert demo.checks[1].first_offset == 48_213, "a log that starts past offset 0"
    shared = set.intersection(*(c.objects for c in demo.checks))
    assert shared, "WAL objects hold batches of several partitions"
    # After the merge, the same reads come from tiered segments only, byte for byte.
    for before, after in zip(demo.checks, demo.tiered_checks, strict=True):
        assert after.identical and after.tiered_batches == after.batches == before.batches
        assert after.objects == set(), "no WAL object read any more"
    assert all(len(r.merged) >= 4 for r in demo.merged), "rolled at the broker's segment.bytes"
    assert len(demo.gc.deleted) == demo.wal_objects > 10 and demo.wal_objects_left == 0
    bucket = Path(demo.settings.remote_storage)
    assert not list(bucket.glob("diskless/wal/*")), "the emptied WAL objects are gone"


def test_the_demo_command(tmp_path: Path) -> None:
    assert main(["diskless", "demo", "--data-dir", str(tmp_path / "d")]) == 0
