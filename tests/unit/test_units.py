"""tierflow.units: the one way every command, the page and the demo print sizes, compression,
durations, times, counted nouns and errors."""

from __future__ import annotations

import logging

import pytest

from tierflow.metadata.errors import UnknownTopicError
from tierflow.transform.errors import CorruptChunkError
from tierflow.units import (
    compression_ratio,
    counted,
    error_line,
    failure_line,
    human_bytes,
    human_duration,
    iso_utc,
    plural,
)


@pytest.mark.parametrize(
    ("size", "shown"),
    [
        (None, "-"),
        (0, "0 B"),
        (1023, "1023 B"),
        (1024, "1.00 KiB"),
        (64_835, "63.3 KiB"),
        (1_363_148, "1.30 MiB"),
        (5 * 1024**3, "5.00 GiB"),
        (3 * 1024**5, "3.00 PiB"),
    ],
)
def test_sizes_are_binary_units_with_three_significant_digits(size: int | None, shown: str) -> None:
    assert human_bytes(size) == shown


def test_compression_is_original_over_stored() -> None:
    # The README's 5.2x and the demo's figure are the same quotient: higher is smaller.
    assert compression_ratio(5_200, 1_000) == "5.2x"
    assert compression_ratio(1_000, 1_100) == "0.9x"
    assert compression_ratio(1_000, 0) == "-"


@pytest.mark.parametrize(
    ("ms", "shown"),
    [(800, "800 ms"), (61_000, "1 min 1 s"), (90_061_000, "1 d 1 h"), (-7_200_000, "-2 h")],
)
def test_durations_show_their_two_largest_units(ms: int, shown: str) -> None:
    assert human_duration(ms) == shown


def test_times_are_iso_8601_utc_to_the_millisecond() -> None:
    assert iso_utc(1_764_211_965_123) == "2025-11-27T02:52:45.123Z"
    assert iso_utc(999) == "1970-01-01T00:00:00.999Z"


@pytest.mark.parametrize(
    ("count", "noun", "many", "shown"),
    [
        (0, "segment", None, "0 segments"),
        (1, "segment", None, "1 segment"),
        (2, "segment", None, "2 segments"),
        (1, "batch", "batches", "1 batch"),
        (3, "batch", "batches", "3 batches"),
    ],
    ids=["none", "one", "two", "one irregular", "three irregular"],
)
def test_a_count_takes_its_noun_in_the_right_number(
    count: int, noun: str, many: str | None, shown: str
) -> None:
    assert counted(count, noun, many) == shown
    assert plural(count, noun, many) == shown.split(" ", 1)[1]


@pytest.mark.parametrize(
    ("error", "line"),
    [
        (
            CorruptChunkError("t/0/x.log", 3, "GCM tag\n does not match"),
            "t/0/x.log: chunk 3: GCM tag does not match",
        ),
        (UnknownTopicError("unknown topic 'x'"), "unknown topic 'x'"),
        (KeyError("orders-0"), "orders-0"),
        (RuntimeError(), "RuntimeError"),
    ],
    ids=["library error", "not found", "bare KeyError", "no message"],
)
def test_an_error_line_is_its_message_on_one_line(error: Exception, line: str) -> None:
    assert error_line(error) == line


def test_a_failure_line_logs_the_class_for_verbose_runs(caplog: pytest.LogCaptureFixture) -> None:
    error = CorruptChunkError("t/0/x.log", 0, "not a zstd frame")
    with caplog.at_level(logging.INFO, logger="tierflow.units"):
        line = failure_line(error, "t-0 segment 5")
    assert line == "t-0 segment 5: t/0/x.log: chunk 0: not a zstd frame"
    assert "CorruptChunkError" not in line and "tierflow." not in line
    (record,) = caplog.records
    assert record.exc_info is not None and record.exc_info[0] is CorruptChunkError
