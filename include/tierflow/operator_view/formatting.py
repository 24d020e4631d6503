"""The page's figures: tierflow.units' sizes and durations, UTC times and Kafka's retention
values.

Wherever the page rounds, the exact value travels with it (a title and a data attribute), so
nothing shown has to be trusted over the store.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from tierflow.units import human_bytes, human_duration


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
