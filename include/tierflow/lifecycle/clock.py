"""Milliseconds since the epoch, injectable so that tests and backfills control "now"."""

from __future__ import annotations

from collections.abc import Callable

from tierflow.metadata.store_base import wall_clock_ms

Clock = Callable[[], int]

__all__ = ["Clock", "wall_clock_ms"]
