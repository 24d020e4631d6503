"""``tierflow copy`` and ``tierflow verify``: what they say per partition and for the run, their
``--json`` schemas, and a failed copy said once."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.support.tiered import Tiered, eligible
from tierflow.cli import main
from tierflow.units import human_bytes

COPY_PARTITION_KEYS = {
    "topic",
    "partition",
    "copied",
    "cleaned_up",
    "pending",
    "pending_bytes",
    "skipped",
    "held_back",
    "waiting",
    "error",
}
COPIED_KEYS = {"segment_id", "start_offset", "end_offset", "size_in_bytes"}
VERIFY_KEYS = {"partitions", "segments", "identical", "different", "local_copy_gone"}
FIGURE_KEYS = {
    "topic",
    "partition",
    "local_segments",
    "local_bytes",
    "remote_segments",
    "remote_bytes",
    "stored_bytes",
    "states",
    "verified",
    "checked",
}
CHECK_KEYS = {
    "topic",
    "partition",
    "segment_id",
    "start_offset",
    "end_offset",
    "size_in_bytes",
    "identical",
    "detail",
}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    capsys.readouterr()
    status = main(list(argv))
    return status, capsys.readouterr().out


def test_a_dry_run_lists_each_partitions_segments_and_writes_nothing(
    untiered: Tiered, capsys: pytest.CaptureFixture[str]
) -> None:
    events = untiered.store.events()
    status, out = run(capsys, "copy", "--dry-run", "--json")
    report = json.loads(out)
    assert untiered.store.events() == events and untiered.store.partitions() == []
    assert status == 0 and report["dry_run"] is True
    for p in report["partitions"]:
        assert set(p) == COPY_PARTITION_KEYS
        expected = [start for start, _end in eligible(untiered.log(p["topic"], p["partition"]))]
        assert p["pending"] == expected and p["copied"] == []
        log_ = untiered.log(p["topic"], p["partition"])
        sizes = {s.base_offset: s.size_in_bytes() for s in log_.segments()}
        assert p["pending_bytes"] == sum(sizes[base] for base in expected)
    assert len(report["partitions"]) == len(untiered.logs())
    status, text = run(capsys, "copy", "--dry-run")
    segments = sum(len(p["pending"]) for p in report["partitions"])
    size = human_bytes(sum(p["pending_bytes"] for p in report["partitions"]))
    partitions = len(untiered.logs())
    assert f"would copy {segments} segments ({size}) of {partitions} partitions" in text
    assert "[]" not in text and "dry run, nothing written" in text


def test_copy_says_what_it_copied_then_that_nothing_is_left(
    untiered: Tiered, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out = run(capsys, "copy", "--json")
    report = json.loads(out)
    copied = [s for p in report["partitions"] for s in p["copied"]]
    assert status == 0 and copied and all(set(s) == COPIED_KEYS for s in copied)
    total = sum(s["size_in_bytes"] for s in copied)
    # Each step's wall seconds, so what ran outside the rewrite (the serial part) can be read.
    steps = report["seconds"]
    assert set(steps) == {"prepare_s", "rewrite_s", "finalize_s"}
    assert all(seconds >= 0 for seconds in steps.values()) and steps["rewrite_s"] > 0

    status, again = run(capsys, "copy")
    partitions = len(untiered.logs())
    assert status == 0
    assert again.splitlines()[-1] == (
        f"nothing to copy: {partitions} partitions of registered topics checked, every "
        "eligible segment is already remote"
    )
    status, dry = run(capsys, "copy", "--dry-run")
    assert dry.splitlines()[-1].startswith("nothing to copy: ") and "[]" not in dry
    assert human_bytes(total) != str(total)  # the text shows units, --json the exact bytes


def test_copy_prints_each_segment_and_the_total_in_human_units(
    untiered: Tiered, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out = run(capsys, "copy", "--topic", "orders")
    lines = out.splitlines()
    rows = untiered.store.segments(untiered.store.topic("orders").topic_id, 0)
    assert status == 0
    for row in rows:
        line = f"  orders-0: copied offsets {row.start_offset}-{row.end_offset} "
        line += f"({human_bytes(row.segment_size_bytes)}) as {row.segment_id}"
        assert line in lines
    assert lines[-1].startswith("copied ") and " segments (" in lines[-1]


def test_no_partition_matching_the_filter_is_not_found(
    untiered: Tiered, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(["copy", "--topic", "orders", "--partition", "99"])
    err = capsys.readouterr().err
    assert status == 3
    assert err.strip() == (
        "tierflow: error: no partition in the log dirs matches --topic orders --partition 99"
    )


def test_verify_json_has_every_check_and_the_figures(
    untiered: Tiered, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, "copy")[0] == 0
    status, out = run(capsys, "verify", "--json")
    report = json.loads(out)
    assert status == 0 and set(report) == VERIFY_KEYS
    assert all(set(c) == CHECK_KEYS for c in report["segments"])
    assert report["identical"] == len(report["segments"]) > 0
    for figures in report["partitions"]:
        assert set(figures) == FIGURE_KEYS
        assert figures["verified"] == figures["checked"] == figures["remote_segments"]
    status, text = run(capsys, "verify")
    checked = len(report["segments"])
    assert f"{checked} of {checked} segments read back identical" in text.splitlines()[-1]


def test_a_failed_copy_is_said_once(untiered: Tiered) -> None:
    """A corrupt segment fails its partition: one line names it, not a log line and then the
    summary repeating it. Run as a real process, so the CLI's own logging set-up applies."""
    log_ = untiered.log("orders", 0)
    segment = log_.segments()[1].log_path
    data = bytearray(segment.read_bytes())
    data[80] ^= 0xFF  # inside the first batch's records: its CRC no longer matches
    segment.write_bytes(bytes(data))
    env = {**os.environ, **untiered.settings.as_env()}
    done = subprocess.run(
        [sys.executable, "-m", "tierflow.cli", "copy", "--topic", "orders", "--partition", "0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert output.count(segment.name) == 1, output
    assert "tierflow: error: orders-0: " in done.stderr, "on stderr, the partition named once"
    assert "1 partition failed: orders-0" in done.stdout.splitlines()[-1]


def test_copy_and_verify_report_progress_on_stderr_only(
    untiered: Tiered, capsys: pytest.CaptureFixture[str]
) -> None:
    """Off a terminal (capsys is a pipe) progress is plain lines on stderr, ending in the
    totals; stdout holds only the report, and --json silences progress."""
    capsys.readouterr()
    assert main(["copy"]) == 0
    out, err = capsys.readouterr()
    rows = [r for log_ in untiered.logs() for r in finished_rows(untiered, log_)]
    size = human_bytes(sum(r.segment_size_bytes for r in rows))
    last = err.splitlines()[-1]
    assert last.startswith(f"copy: done, {len(rows)}/{len(rows)} segments, {size} of {size}")
    assert "copy: " not in out
    assert main(["verify"]) == 0
    out, err = capsys.readouterr()
    assert err.splitlines()[-1].startswith(f"verify: done, {len(rows)}/{len(rows)} segments")
    assert main(["verify", "--json"]) == 0
    out, err = capsys.readouterr()
    assert err == "" and json.loads(out)["identical"] == len(rows)


def finished_rows(t: Tiered, log_) -> list:
    return t.store.segments(t.store.topic(log_.topic).topic_id, log_.partition)
