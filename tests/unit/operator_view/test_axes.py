"""The chart's ticks: round byte values up to the first one at or above the largest, and round
UTC times labelled as dates. Labels are read back independently (a regular expression and
datetime), not through the code that wrote them."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from fractions import Fraction
from itertools import pairwise

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from tierflow.operator_view.axes import byte_label, byte_ticks, time_ticks

KIB, MIB, GIB = 1024, 1024**2, 1024**3
POWERS = {"B": 1, "KiB": KIB, "MiB": MIB, "GiB": GIB, "TiB": 1024**4, "PiB": 1024**5}
LABEL = re.compile(r"(?P<number>\d+(?:\.\d{1,2})?) (?P<unit>B|KiB|MiB|GiB|TiB|PiB)")
# A round step: 1, 2, 2.5 or 5 times a power of ten of a binary unit.
ROUND_MANTISSAS = {Fraction(1), Fraction(2), Fraction(5, 2), Fraction(5)}
DAY_MS = 86_400_000


def label_bytes(label: str) -> int:
    """``1.25 MiB`` -> 1310720, read as a person reads it."""
    if label == "0":
        return 0
    match = LABEL.fullmatch(label)
    assert match, f"not a round size: {label!r}"
    value = Fraction(match["number"]) * POWERS[match["unit"]]
    assert value.denominator == 1, label
    return int(value)


def is_round_step(step: int) -> bool:
    for unit in POWERS.values():
        scaled = Fraction(step, unit)
        while scaled >= 10:
            scaled /= 10
        while scaled < 1:
            scaled *= 10
        if scaled in ROUND_MANTISSAS:
            return True
    return False


@pytest.mark.parametrize(
    ("largest", "labels"),
    [
        pytest.param(1_000_000, ["0", "256 KiB", "512 KiB", "768 KiB", "1 MiB"], id="1-mb"),
        # was 444 KiB, 887 KiB, 1.30 MiB
        pytest.param(1_363_148, ["0", "512 KiB", "1 MiB", "1.5 MiB"], id="1.3-mib"),
        pytest.param(400, ["0", "100 B", "200 B", "300 B", "400 B"], id="400-b"),
        pytest.param(9 * KIB, ["0", "2.5 KiB", "5 KiB", "7.5 KiB", "10 KiB"], id="9-kib"),
        pytest.param(5 * GIB + 1, ["0", "2 GiB", "4 GiB", "6 GiB"], id="just-over-5-gib"),
        pytest.param(0, ["0", "1 B"], id="nothing"),
    ],
)
def test_byte_ticks_read_as_round_sizes(largest: int, labels: list[str]) -> None:
    ticks = byte_ticks(largest)
    assert [t.label for t in ticks] == labels
    assert [t.value for t in ticks] == [label_bytes(label) for label in labels]


@given(st.integers(min_value=0, max_value=10 * 1024**5))
def test_byte_ticks_are_even_round_steps_reaching_just_past_the_largest(largest: int) -> None:
    ticks = byte_ticks(largest)
    values = [t.value for t in ticks]
    step = values[1]
    assert values == [i * step for i in range(len(values))]
    assert 2 <= len(values) <= 5
    assert is_round_step(step), step
    assert values[-1] >= max(largest, 1) > values[-2], "the top is the first tick at or above"
    assert [label_bytes(t.label) for t in ticks] == values


def test_byte_labels_drop_trailing_zeros() -> None:
    assert [byte_label(v) for v in (0, 768 * KIB, MIB, 1280 * KIB, 3 * MIB // 2)] == [
        "0",
        "768 KiB",
        "1 MiB",
        "1.25 MiB",
        "1.5 MiB",
    ]


def ms(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1000)


@pytest.mark.parametrize(
    ("first", "last", "labels", "pattern"),
    [
        pytest.param(  # seconds: the date still shown
            "2026-11-27T23:59:41.500",
            "2026-11-28T00:00:10",
            [
                "11-27 23:59:45",
                "11-27 23:59:50",
                "11-27 23:59:55",
                "11-28 00:00:00",
                "11-28 00:00:05",
                "11-28 00:00:10",
            ],
            "%m-%d %H:%M:%S",
            id="seconds-with-the-date",
        ),
        pytest.param(  # minutes: month-day and time
            "2026-11-27T14:03:12.250",
            "2026-11-27T14:08:40",
            ["11-27 14:04", "11-27 14:05", "11-27 14:06", "11-27 14:07", "11-27 14:08"],
            "%m-%d %H:%M",
            id="minutes",
        ),
        pytest.param(  # hours across midnight
            "2026-11-27T20:10:00",
            "2026-11-28T07:00:00",
            ["11-27 22:00", "11-28 00:00", "11-28 02:00", "11-28 04:00", "11-28 06:00"],
            "%m-%d %H:%M",
            id="hours-across-midnight",
        ),
        pytest.param(  # days: dates at UTC midnight
            "2026-11-27T14:00:00",
            "2026-12-02T09:00:00",
            ["2026-11-28", "2026-11-29", "2026-11-30", "2026-12-01", "2026-12-02"],
            "%Y-%m-%d",
            id="days-at-utc-midnight",
        ),
        pytest.param(  # weeks start on Mondays
            "2026-11-27T00:00:00",
            "2027-01-01T00:00:00",
            ["2026-11-30", "2026-12-07", "2026-12-14", "2026-12-21", "2026-12-28"],
            "%Y-%m-%d",
            id="weeks-from-mondays",
        ),
        pytest.param(  # months, then quarters
            "2026-11-27T00:00:00",
            "2027-09-15T00:00:00",
            ["2027-01", "2027-03", "2027-05", "2027-07", "2027-09"],
            "%Y-%m",
            id="months-then-quarters",
        ),
    ],
)
def test_time_ticks_are_round_utc_dates(
    first: str, last: str, labels: list[str], pattern: str
) -> None:
    ticks = time_ticks(ms(first), ms(last))
    assert [t.label for t in ticks] == labels
    for tick in ticks:
        moment = datetime.fromtimestamp(tick.value / 1000, tz=UTC)
        assert moment.strftime(pattern) == tick.label
        assert pattern != "%Y-%m-%d" or moment.hour == 0, "dates at UTC midnight"
        assert ms(first) <= tick.value <= ms(last)
        assert tick.value % (1000 if pattern.endswith("%S") else 60_000) == 0


@given(
    st.integers(min_value=ms("2000-01-01T00:00:00"), max_value=ms("2100-01-01T00:00:00")),
    st.integers(min_value=2_000, max_value=40 * 365 * DAY_MS),
)
# 12 days from just after a Monday: seven 2-day ticks, but one week tick (found by hypothesis).
@example(first=1_474_848_000_001, span=1_036_800_001)
def test_time_ticks_are_few_ordered_and_inside_the_span(first: int, span: int) -> None:
    ticks = time_ticks(first, first + span)
    values = [t.value for t in ticks]
    assert 2 <= len(values) <= 6
    assert values == sorted(set(values))
    assert first <= values[0] and values[-1] <= first + span
    assert all(v % 1000 == 0 for v in values), "whole seconds at least"
    gaps = {b - a for a, b in pairwise(values)}
    assert len(gaps) == 1 or min(gaps) >= 28 * DAY_MS, "even steps, but for calendar months"


def test_a_span_too_short_to_mark_shows_its_time_in_full() -> None:
    at = ms("2026-11-27T14:03:12.250")
    for last in (at, at + 300):
        assert [t.label for t in time_ticks(at, last)] == ["2026-11-27 14:03:12"]
