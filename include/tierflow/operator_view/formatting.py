"""Figures for people: sizes in binary units, ages, UTC times and Kafka's retention values.

Only the page rounds; the exact value always travels with it (a title and a data attribute),
so nothing shown has to be trusted over the store.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def human_bytes(size: int | None) -> str:
    """``1.5 MiB``; three significant digits above 1 KiB, exact below; ``-`` for unknown."""
    if size is None:
        return "-"
    value, unit = float(size), 0
    while abs(value) >= 1024 and unit < len(UNITS) - 1:
        value /= 1024
        unit += 1
    if unit == 0:
        return f"{size} B"
    digits = 2 if abs(value) < 10 else 1 if abs(value) < 100 else 0
    return f"{value:.{digits}f} {UNITS[unit]}"


def human_duration(ms: int) -> str:
    """The two largest units: ``3 d 4 h``, ``5 min 2 s``, ``800 ms``."""
    if abs(ms) < 1000:
        return f"{ms} ms"
    seconds = ms // 1000
    parts = []
    for unit, size in (("d", 86_400), ("h", 3_600), ("min", 60), ("s", 1)):
        if seconds >= size:
            parts.append(f"{seconds // size} {unit}")
            seconds %= size
    return " ".join(parts[:2])


def utc(ms: int, *, millis: bool = False) -> str:
    """``2026-11-21 02:00:00 UTC`` (``02:00:00.250`` with ``millis``)."""
    when = datetime.fromtimestamp(ms / 1000, tz=UTC)
    shown = when.strftime("%Y-%m-%d %H:%M:%S")
    return f"{shown}.{ms % 1000:03d} UTC" if millis else f"{shown} UTC"


def retention_ms(value: int) -> str:
    """Kafka's retention.ms values: -1 unlimited, -2 the matching retention.* setting."""
    return _retention(value, "retention.ms", human_duration)


def retention_bytes(value: int) -> str:
    return _retention(value, "retention.bytes", human_bytes)


def _retention(value: int, setting: str, human: Callable[[int], str]) -> str:
    if value == -1:
        return "unlimited"
    if value == -2:
        return f"= {setting}"
    return human(value)
