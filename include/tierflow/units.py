"""Figures for people, one convention for the whole tool: the CLI, the page, the demo, logs.

- Sizes in binary units (``1.50 MiB``), three significant digits, exact below 1 KiB. Wherever a
  size is rounded for reading, the exact bytes travel with it (``--json``, the page's titles).
- Compression as Kafka people quote it: original ÷ stored, ``5.2x`` (higher is better).
- Durations as their two largest units (``3 d 4 h``); times as ISO-8601 UTC.

Imports nothing of tierflow, so every layer can print the same way.
"""

from __future__ import annotations

from datetime import UTC, datetime

UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def human_bytes(size: int | None) -> str:
    """``1.50 MiB``; three significant digits above 1 KiB, exact below; ``-`` for unknown."""
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


def compression_ratio(original: int, stored: int) -> str:
    """``5.2x``: how many times smaller the stored form is; ``-`` when nothing is stored."""
    if stored <= 0 or original <= 0:
        return "-"
    return f"{original / stored:.1f}x"


def human_duration(ms: int) -> str:
    """The two largest units: ``3 d 4 h``, ``5 min 2 s``, ``800 ms``."""
    if abs(ms) < 1000:
        return f"{ms} ms"
    sign, seconds = ("-" if ms < 0 else ""), abs(ms) // 1000
    parts = []
    for unit, size in (("d", 86_400), ("h", 3_600), ("min", 60), ("s", 1)):
        if seconds >= size:
            parts.append(f"{seconds // size} {unit}")
            seconds %= size
    return sign + " ".join(parts[:2])


def iso_utc(ms: int) -> str:
    """Epoch milliseconds as ISO-8601 UTC to the millisecond: ``2026-11-25T03:12:45.123Z``."""
    # Whole seconds and milliseconds apart: ms / 1000 as a float can round to the wrong ms.
    moment = datetime.fromtimestamp(ms // 1000, tz=UTC).replace(microsecond=ms % 1000 * 1000)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
