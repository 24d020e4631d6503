"""Round ticks for the chart's axes: bytes in binary units up the side, UTC times along the foot.

A reader compares a line with the grid, so the grid must sit on values people read at a glance:
``0, 256 KiB, 512 KiB, 768 KiB, 1 MiB`` rather than quarters of the largest value. A byte step
is 1, 2, 2.5 or 5 times a power of ten of a binary unit, where the result is a whole number of
bytes that reads cleanly in the units the ticks cross; near a unit's end it is a quarter or a
half of the next unit (256 KiB, 512 KiB), so the ticks meet the unit exactly. Time steps are
what a clock or a calendar counts in (seconds to years), aligned in UTC, labelled ISO-like.
"""

from __future__ import annotations

import calendar
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import count

from tierflow.units import UNITS

# Of each unit; 256 and 512 are the next unit's quarter and half (250 and 500 would end the
# ticks at "1000 KiB" instead of "1 MiB").
BYTE_MULTIPLES = (1, 2, 2.5, 5, 10, 20, 25, 50, 100, 200, 256, 512)
MAX_BYTE_INTERVALS = 4  # at most five labels on the chart's height
MAX_TIME_TICKS = 6  # "11-27 14:00:30" labels stay apart on the chart's width

SECOND_MS, MINUTE_MS, HOUR_MS, DAY_MS = 1000, 60_000, 3_600_000, 86_400_000
MONDAY_MS = 4 * DAY_MS  # 1970-01-01 was a Thursday: weeks start on Mondays


@dataclass(frozen=True)
class Tick:
    """One labelled grid line: ``value`` in the axis' own unit (bytes, or epoch ms)."""

    value: int
    label: str


@dataclass(frozen=True)
class TimeStep:
    """A fixed step (``ms``) aligned to ``offset_ms``, or a calendar step of ``months``."""

    label_format: str
    ms: int = 0
    months: int = 0
    offset_ms: int = 0

    @property
    def approx_ms(self) -> float:
        return self.ms or self.months * 30.44 * DAY_MS


TIME_STEPS = (
    *(TimeStep("%m-%d %H:%M:%S", ms=n * SECOND_MS) for n in (1, 2, 5, 10, 15, 30)),
    *(TimeStep("%m-%d %H:%M", ms=n * MINUTE_MS) for n in (1, 2, 5, 10, 15, 30)),
    *(TimeStep("%m-%d %H:%M", ms=n * HOUR_MS) for n in (1, 2, 3, 6, 12)),
    *(TimeStep("%Y-%m-%d", ms=n * DAY_MS) for n in (1, 2)),
    *(TimeStep("%Y-%m-%d", ms=n * 7 * DAY_MS, offset_ms=MONDAY_MS) for n in (1, 2)),
    *(TimeStep("%Y-%m", months=n) for n in (1, 2, 3, 6)),
    *(TimeStep("%Y", months=12 * n) for n in (1, 2, 5, 10, 20, 50, 100)),
)


def byte_steps() -> Iterator[int]:
    """Every round byte step, smallest first (whole bytes only: no 2.5 B)."""
    for power in range(len(UNITS)):
        for multiple in BYTE_MULTIPLES:
            step = multiple * 1024**power
            if step == int(step):
                yield int(step)
    largest = 1024 ** (len(UNITS) - 1)
    for exponent in count(3):  # beyond 512 PiB: 1000 PiB, 2000 PiB, 5000 PiB, ...
        for multiple in (1, 2, 5):
            yield multiple * 10**exponent * largest


def byte_ticks(largest: int) -> list[Tick]:
    """0, then steps up to the first one at or above ``largest``: at most five ticks."""
    largest = max(largest, 1)
    step = next(s for s in byte_steps() if -(-largest // s) <= MAX_BYTE_INTERVALS)
    intervals = -(-largest // step)
    return [Tick(i * step, byte_label(i * step)) for i in range(intervals + 1)]


def byte_label(value: int) -> str:
    """``0``, ``768 KiB``, ``1.25 MiB``: a round value in its largest whole unit, no padding."""
    if value == 0:
        return "0"
    power = 0
    while power < len(UNITS) - 1 and abs(value) >= 1024 ** (power + 1):
        power += 1
    return f"{value / 1024**power:g} {UNITS[power]}"


def time_ticks(first_ms: int, last_ms: int) -> list[Tick]:
    """Round UTC times within [first_ms, last_ms], the step chosen by the span; at least one."""
    span = max(last_ms - first_ms, 0)
    finer: tuple[list[int], TimeStep] | None = None  # the last step with too many
    for step in TIME_STEPS:
        if span / step.approx_ms > MAX_TIME_TICKS + 1:
            continue  # too many for sure: not worth listing them
        found = _times(first_ms, last_ms, step)
        if len(found) < 2 and finer:  # the next step up skips the span: every n-th of finer
            found, step = _thinned(finer[0]), finer[1]
        if len(found) < 2:  # shorter than two seconds: nothing round to mark
            return _just(first_ms)
        if len(found) <= MAX_TIME_TICKS:
            return [Tick(ms, _label(ms, step.label_format)) for ms in found]
        finer = (found, step)
    return _just(first_ms)


def _thinned(values: list[int]) -> list[int]:
    """Every n-th value, n the smallest that leaves at most MAX_TIME_TICKS: steps stay even."""
    n = -(-len(values) // MAX_TIME_TICKS)
    return values[::n]


def _just(ms: int) -> list[Tick]:
    """A span too short for any round time (or none at all): the first time, in full."""
    return [Tick(ms, _label(ms, "%Y-%m-%d %H:%M:%S"))]


def _times(first_ms: int, last_ms: int, step: TimeStep) -> list[int]:
    if step.ms:
        start = -(-(first_ms - step.offset_ms) // step.ms) * step.ms + step.offset_ms
        return list(range(start, last_ms + 1, step.ms))
    when = datetime.fromtimestamp(first_ms // 1000, tz=UTC)
    month = when.year * 12 + when.month - 1  # months since year 0, 0-based
    month += -month % step.months  # the step's own months: quarters start in Jan, Apr, ...
    found = []
    while (ms := _month_start_ms(month)) <= last_ms:
        if ms >= first_ms:
            found.append(ms)
        month += step.months
    return found


def _month_start_ms(month: int) -> int:
    year, index = divmod(month, 12)
    return calendar.timegm((year, index + 1, 1, 0, 0, 0)) * 1000


def _label(ms: int, label_format: str) -> str:
    return datetime.fromtimestamp(ms // 1000, tz=UTC).strftime(label_format)
