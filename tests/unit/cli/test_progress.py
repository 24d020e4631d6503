"""Progress of long commands: on stderr only; off a terminal a line every few seconds (timed by
the clock the test passes, never by the wall) and a last one; on a terminal a rich bar."""

from __future__ import annotations

import os
import sys
import threading

import pytest

from tierflow.cli.progress import work_progress

GIB = 1024**3


class Clock:
    """Seconds that pass only when the test says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_off_a_terminal_a_line_at_most_every_log_every_s_then_a_last_one(capsys) -> None:
    clock = Clock()
    with work_progress(
        "copy", segments=40, bytes=40 * GIB // 10, log_every_s=10, clock=clock
    ) as progress:
        for n in range(40):
            clock.now += 1
            progress.note(f"orders-0 {n * 100:020d}.log")
            progress.advance(1, GIB // 10)

    out, err = capsys.readouterr()
    assert out == ""
    lines = err.splitlines()
    # 40 segments over 40 s: one line each 10 s (not one per segment), and the last.
    assert len(lines) == 5
    # At 10 s the note of the tenth segment writes the line: nine are done, it is at work.
    assert lines[0] == (
        "copy: 9/40 segments, 922 MiB of 4.00 GiB (22%), 92.2 MiB/s, 34 s left; "
        "now orders-0 00000000000000000900.log"
    )
    assert [line.split(",")[0] for line in lines[1:4]] == [
        "copy: 19/40 segments",
        "copy: 29/40 segments",
        "copy: 39/40 segments",
    ]
    assert lines[4] == "copy: done, 40/40 segments, 4.00 GiB of 4.00 GiB (100%), 102 MiB/s, in 40 s"


def test_totals_found_during_the_work_count(capsys) -> None:
    clock = Clock()
    with work_progress("reconcile", log_every_s=10, clock=clock) as progress:
        progress.add_total(segments=3, bytes=3 * 1024)
        progress.advance(3, 3 * 1024)
        progress.add_total(segments=1, bytes=1024)
        clock.now += 10
        progress.advance(1, 1024)

    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "reconcile: 4/4 segments, 4.00 KiB of 4.00 KiB (100%), 410 B/s"
    assert (
        lines[-1] == "reconcile: done, 4/4 segments, 4.00 KiB of 4.00 KiB (100%), 410 B/s, in 10 s"
    )


def test_a_failed_block_ends_with_stopped_and_raises(capsys) -> None:
    clock = Clock()
    with (
        pytest.raises(RuntimeError, match="bucket gone"),
        work_progress("verify", segments=2, bytes=2048, clock=clock) as progress,
    ):
        progress.advance(1, 1024)
        clock.now += 2
        raise RuntimeError("bucket gone")
    assert capsys.readouterr().err == (
        "verify: stopped, 1/2 segments, 1.00 KiB of 2.00 KiB (50%), 512 B/s, in 2 s\n"
    )


def test_work_that_went_through_but_not_well_says_so_last(capsys) -> None:
    with work_progress("copy", segments=2, clock=Clock()) as progress:
        progress.advance(2)
        progress.ended("1 partition failed")
    assert capsys.readouterr().err == "copy: 1 partition failed, 2/2 segments (100%), in 0 ms\n"
    with work_progress("copy", enabled=False, clock=Clock()) as progress:
        progress.ended("1 partition failed")  # --json: the JSON says it
    assert capsys.readouterr().err == ""


def test_segments_alone_show_their_percentage(capsys) -> None:
    with work_progress("rewrap-keys", segments=4, clock=Clock()) as progress:
        progress.advance(1)
    assert capsys.readouterr().err == "rewrap-keys: done, 1/4 segments (25%), in 0 ms\n"


def test_no_work_no_line_and_disabled_nothing_at_all(capsys) -> None:
    with work_progress("reconcile", clock=Clock()):
        pass
    clock = Clock()
    with work_progress("copy", log_every_s=1, enabled=False, clock=clock) as progress:
        progress.add_total(10, 10 * GIB)
        for _ in range(10):
            clock.now += 5
            progress.note("orders-0 00000000000000001200.log")
            progress.advance(1, GIB)
    assert capsys.readouterr() == ("", "")


def test_notes_print_as_they_are(capsys) -> None:
    clock = Clock()
    with work_progress("reconcile", log_every_s=1, clock=clock) as progress:
        progress.add_total(1, 10)
        clock.now += 1
        progress.note("keys under [bold]tiered/:x:/")
    assert "; now keys under [bold]tiered/:x:/" in capsys.readouterr().err


def test_on_a_terminal_a_bar_in_binary_units_on_stderr(monkeypatch, capsys) -> None:
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.setenv("COLUMNS", "160")
    for variable in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(variable, raising=False)
    screen, terminal = os.openpty()
    drawn = bytearray()
    reader = threading.Thread(target=_drain, args=(screen, drawn))
    reader.start()
    with open(terminal, "w", closefd=True) as stderr:
        monkeypatch.setattr(sys, "stderr", stderr)
        with work_progress("copy", segments=4, bytes=4 * GIB) as progress:
            progress.note("orders-0 00000000000000001200.log")
            progress.advance(3, 3 * GIB)
        monkeypatch.undo()
    reader.join()
    os.close(screen)

    text = drawn.decode(errors="replace")
    assert "copy" in text and "━" in text
    assert "3/4 segments  3.00 GiB/4.00 GiB" in text
    assert capsys.readouterr().out == ""


def _drain(screen: int, into: bytearray) -> None:
    """Read the terminal until its other end is closed (EIO on Linux), so rich never blocks."""
    while True:
        try:
            chunk = os.read(screen, 65536)
        except OSError:
            return
        if not chunk:
            return
        into.extend(chunk)


def test_what_the_command_prints_meanwhile_stays_on_stdout(capsys) -> None:
    clock = Clock()
    with work_progress("copy", segments=1, bytes=1, clock=clock) as progress:
        print("a table row")
        progress.advance(1, 1)
    out, err = capsys.readouterr()
    assert out == "a table row\n"
    assert err.startswith("copy: done, 1/1 segments")
