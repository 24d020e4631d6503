"""Figures for people, one convention for the whole tool: the CLI, the page, the demo, logs.

- Sizes in binary units (``1.50 MiB``), three significant digits, exact below 1 KiB. Wherever a
  size is rounded for reading, the exact bytes travel with it (``--json``, the page's titles).
- Compression as Kafka people quote it: original ÷ stored, ``5.2x`` (higher is better).
- Durations as their two largest units (``3 d 4 h``); times as ISO-8601 UTC.
- Counts with their noun in the right number (``1 segment``, ``2 segments``), never ``(s)``.
- An error as its message on one line, without the class's module path: the operator acts on
  the file, offset or key it names; the class and the traceback stay in the log (``-v``).

Imports nothing of tierflow, so every layer can print the same way.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

log = logging.getLogger(__name__)

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


def plural(count: int, noun: str, many: str | None = None) -> str:
    """The noun in the number ``count`` asks for: ``offset`` for 1, ``offsets`` otherwise;
    ``many`` for a plural that is not ``noun + "s"`` (``batches``)."""
    return noun if count == 1 else many or noun + "s"


def counted(count: int, noun: str, many: str | None = None) -> str:
    """``1 segment``, ``0 segments``, ``3 batches``."""
    return f"{count} {plural(count, noun, many)}"


def error_line(exc: BaseException) -> str:
    """The error's message on one line, as the operator reads it; its class's name only when
    it has no message. A lone KeyError's str() would quote its key: the key is printed as is."""
    keyed = isinstance(exc, KeyError) and len(exc.args) == 1
    message = " ".join((str(exc.args[0]) if keyed else str(exc)).split())
    return message or type(exc).__name__


def failure_line(exc: BaseException, where: str = "") -> str:
    """``where: message`` (or the message alone) for a failure caught to be reported later: a
    job's result, which may cross to a Spark executor and back as text. The class and the
    traceback go to the log at INFO, where ``-v`` shows them; the line stays the operator's."""
    line = error_line(exc)
    log.info("reported as failed: %s", line, exc_info=exc)
    return f"{where}: {line}" if where else line
