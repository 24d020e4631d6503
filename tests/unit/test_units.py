"""tierflow.units: the one way every command, the page and the demo print sizes, compression,
durations and times."""

from __future__ import annotations

import pytest

from tierflow.units import compression_ratio, human_bytes, human_duration, iso_utc


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
