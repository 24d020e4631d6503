"""Progress of long commands (copy, verify, reconcile, rewrap-keys), always on stderr.

stdout carries the tables and ``--json``, so progress never goes there. On a terminal it is a
rich bar over bytes (segments beside it) with speed, time left and the item at work; the bar
stays on screen when the work ends, as a record of what was done and how long it took. Off a
terminal (a pipe, a CI log, a cron mail) a bar would be noise, and a line per segment too many
at scale: one plain line at most every ``log_every_s`` seconds, written when the work reports
something (a stalled item writes nothing), and a last line saying done or stopped, unless there
was no work at all.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Protocol

from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeRemainingColumn,
)
from rich.table import Column
from rich.text import Text

from tierflow.cli.console import stderr_console
from tierflow.lifecycle.progress import NoProgress
from tierflow.lifecycle.progress import Progress as LibraryProgress
from tierflow.units import human_bytes, human_duration


class WorkProgress(LibraryProgress, Protocol):
    """What a command hands to the library's operations: ``add_total`` as work is found
    (totals may grow), ``advance`` as it is done, ``note`` for the item at work; and
    ``ended`` when the work went through but not well, for the last line to say so."""

    def ended(self, word: str) -> None:
        """The last line's first word instead of ``done`` (``2 partitions failed``)."""


class _Silent(NoProgress):
    """``--json`` and ``--quiet``: nothing shown, the outcome included."""

    def ended(self, word: str) -> None:
        pass


@contextmanager
def work_progress(
    verb: str,
    *,
    segments: int = 0,
    bytes: int = 0,
    log_every_s: float = 10.0,
    enabled: bool = True,
    clock: Callable[[], float] = time.monotonic,
) -> Iterator[WorkProgress]:
    """Show the work done inside the block on stderr; ``enabled=False`` (``--json``,
    ``--quiet``) shows nothing. ``segments`` and ``bytes`` are totals known up front;
    ``clock`` times the off-terminal lines (tests pass their own)."""
    if not enabled:
        yield _Silent()
    elif sys.stderr.isatty():
        with _bar(verb) as bar:
            bar.add_total(segments, bytes)
            yield bar
    else:
        lines = _Lines(verb, _plain_console(), log_every_s, clock)
        lines.add_total(segments, bytes)
        try:
            yield lines
        except BaseException:
            lines.finish(stopped=True)
            raise
        lines.finish(stopped=False)


@dataclass
class _Counts:
    segments_done: int = 0
    segments_total: int = 0
    bytes_done: int = 0
    bytes_total: int = 0
    label: str = ""
    outcome: str = "done"

    def ended(self, word: str) -> None:
        self.outcome = word

    def add_total(self, segments: int = 0, bytes: int = 0) -> None:
        self.segments_total += segments
        self.bytes_total += bytes
        self.changed()

    def advance(self, segments: int = 0, bytes: int = 0) -> None:
        self.segments_done += segments
        self.bytes_done += bytes
        self.changed()

    def note(self, label: str) -> None:
        self.label = label
        self.changed()

    def changed(self) -> None:
        """Show the new counts, as each display does."""

    @property
    def any_work(self) -> bool:
        return any((self.segments_done, self.segments_total, self.bytes_done, self.bytes_total))

    def fraction(self) -> float | None:
        """Done over total, in bytes when the bytes are known, else in segments."""
        if self.bytes_total:
            return self.bytes_done / self.bytes_total
        if self.segments_total:
            return self.segments_done / self.segments_total
        return None


# -- off a terminal: a line every log_every_s seconds --------------------------------------


class _Lines(_Counts):
    def __init__(self, verb: str, console: Console, every_s: float, clock: Callable[[], float]):
        super().__init__()
        self.verb, self.console, self.every_s, self.clock = verb, console, every_s, clock
        self.started = self.last = clock()

    def changed(self) -> None:
        now = self.clock()
        if now - self.last >= self.every_s:
            self.last = now
            self.console.print(self.line(now))

    def finish(self, *, stopped: bool) -> None:
        if self.any_work:
            final = "stopped" if stopped else self.outcome
            self.console.print(self.line(self.clock(), final=final))

    def line(self, now: float, final: str | None = None) -> str:
        """``copy: 12/40 segments, 1.20 GiB of 4.00 GiB (30%), 85.3 MiB/s, 28 s left;
        now orders-0 00000000000000001200.log``; the last one says done or stopped, and in
        how long."""
        elapsed = now - self.started
        parts = [self._segments(), self._bytes()]
        rate = self.bytes_done / elapsed if elapsed > 0 and self.bytes_done else None
        if rate:
            parts.append(f"{human_bytes(round(rate))}/s")
        if final:
            parts.append(f"in {human_duration(round(elapsed * 1000))}")
        elif rate and self.bytes_total > self.bytes_done:
            left = (self.bytes_total - self.bytes_done) / rate
            parts.append(f"{human_duration(round(left * 1000))} left")
        text = ", ".join(part for part in parts if part)
        if final:
            return f"{self.verb}: {final}, {text}"
        return f"{self.verb}: {text}" + (f"; now {self.label}" if self.label else "")

    def _segments(self) -> str:
        if not self.segments_total:
            return f"{self.segments_done} segments" if self.segments_done else ""
        text = f"{self.segments_done}/{self.segments_total} segments"
        return text if self.bytes_total else text + self._percent()

    def _bytes(self) -> str:
        if self.bytes_total:
            return f"{human_bytes(self.bytes_done)} of {human_bytes(self.bytes_total)}" + (
                self._percent()
            )
        return human_bytes(self.bytes_done) if self.bytes_done else ""

    def _percent(self) -> str:
        fraction = self.fraction()
        return "" if fraction is None else f" ({fraction:.0%})"


def _plain_console() -> Console:
    # Notes quote keys and file names: "[x]" or ":x:" in them print as themselves.
    return stderr_console(markup=False, emoji=False, highlight=False)


# -- on a terminal: a rich bar -------------------------------------------------------------


class _Bar(_Counts):
    """The bar runs over bytes once any are known (speed and time left mean most there),
    over segments until then."""

    def __init__(self, progress: Progress, verb: str):
        super().__init__()
        self.progress = progress
        self.task = progress.add_task(verb, total=None, counts=self)

    def changed(self) -> None:
        by_bytes = self.bytes_total > 0
        self.progress.update(
            self.task,
            total=(self.bytes_total if by_bytes else self.segments_total) or None,
            completed=self.bytes_done if by_bytes else self.segments_done,
        )


@contextmanager
def _bar(verb: str) -> Iterator[_Bar]:
    progress = Progress(
        TextColumn("{task.description}", table_column=Column(no_wrap=True)),
        BarColumn(bar_width=30),
        _CountsColumn(table_column=Column(no_wrap=True)),
        _SpeedColumn(table_column=Column(no_wrap=True)),
        TimeRemainingColumn(elapsed_when_finished=True, table_column=Column(no_wrap=True)),
        # The item at work takes the room left, and gives way first on a narrow terminal.
        TextColumn(
            "{task.fields[counts].label}",
            markup=False,
            table_column=Column(no_wrap=True, overflow="ellipsis", ratio=1),
        ),
        console=stderr_console(),
        expand=True,
        # Lines a command prints to a terminal stdout meanwhile go above the bar; a stdout
        # that is a pipe or a file is left alone (its bytes must not move to stderr).
        redirect_stdout=sys.stdout.isatty(),
    )
    with progress:
        bar = _Bar(progress, verb)
        yield bar
        bar.note("")  # done: the bar stays on screen, the last item would read as unfinished


class _CountsColumn(ProgressColumn):
    """``12/40 segments  1.20 GiB/4.00 GiB``, in tierflow's binary units."""

    def render(self, task: Task) -> Text:
        counts: _Counts = task.fields["counts"]
        text = f"{counts.segments_done}/{counts.segments_total} segments"
        if counts.bytes_total or counts.bytes_done:
            text += f"  {human_bytes(counts.bytes_done)}/{human_bytes(counts.bytes_total)}"
        return Text(text, style="progress.download")


class _SpeedColumn(ProgressColumn):
    """Bytes per second, binary units, while the bar runs over bytes."""

    def render(self, task: Task) -> Text:
        counts: _Counts = task.fields["counts"]
        speed = task.finished_speed or task.speed
        if not counts.bytes_total or not speed:
            return Text("")
        return Text(f"{human_bytes(round(speed))}/s", style="progress.data.speed")
