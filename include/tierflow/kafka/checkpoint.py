"""Kafka's text checkpoint container and the broker-wide offset checkpoints.

``replication-offset-checkpoint`` (high watermarks), ``recovery-point-offset-checkpoint`` and
``log-start-offset-checkpoint`` sit in the root of a log directory; the same container
(version line, count line, one entry per line) also holds ``leader-epoch-checkpoint``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TypeVar

from tierflow.kafka._fs import read_file_bytes, write_atomically
from tierflow.kafka.errors import CorruptCheckpointError

REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
RECOVERY_POINT_OFFSET_CHECKPOINT = "recovery-point-offset-checkpoint"
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
OFFSET_CHECKPOINT_VERSION = 0

T = TypeVar("T")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")  # what Java's BufferedReader.readLine splits on
_WHITESPACE = re.compile(r"[ \t\n\x0b\f\r]+")  # Java's \s
_INT = re.compile(r"[+-]?[0-9]+")


def parse_int(text: str, bits: int = 64) -> int:
    """Java's Integer/Long.parseInt: ASCII digits with an optional sign, in range."""
    if not _INT.fullmatch(text):
        raise ValueError(f"not an integer: {text!r}")
    value = int(text)
    if not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
        raise ValueError(f"{text} does not fit in {bits} bits")
    return value


def split_fields(line: str, count: int) -> list[str]:
    """Fields of a line split like Java's ``String.split("\\s+")``, then counted.

    Java drops trailing empty fields but keeps a leading one, so trailing whitespace is
    accepted and leading whitespace makes the line malformed, exactly as in Kafka.
    """
    fields = _WHITESPACE.split(line)
    while len(fields) > 1 and fields[-1] == "":
        fields.pop()
    if len(fields) != count:
        raise ValueError(f"expected {count} whitespace-separated fields")
    return fields


def read_text_lines(path: str | Path) -> list[str]:
    data = read_file_bytes(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CorruptCheckpointError(path, exc.start, "not UTF-8 text") from exc
    lines = _LINE_BREAK.split(text)
    if lines[-1] == "":
        lines.pop()  # the final line break ends the last line, it does not start a new one
    return lines


def read_checkpoint(path: str | Path, version: int, parse_entry: Callable[[str], T]) -> list[T]:
    """Kafka's CheckpointFile read: an empty file (or a missing count) means no entries."""
    lines = read_text_lines(path)
    if not lines:
        return []
    found = _header_int(path, lines, 1, "version")
    if found != version:
        raise CorruptCheckpointError(path, None, f"unrecognized version {found}", line=1)
    if len(lines) < 2:
        return []
    expected = _header_int(path, lines, 2, "count")
    entries: list[T] = []
    for number, line in enumerate(lines[2:], start=3):
        try:
            entries.append(parse_entry(line))
        except ValueError as exc:
            raise CorruptCheckpointError(
                path, None, f"malformed entry {line!r}: {exc}", line=number
            ) from exc
    if len(entries) != expected:
        raise CorruptCheckpointError(
            path, None, f"expected {expected} entries but found {len(entries)}", line=2
        )
    return entries


def _header_int(path: str | Path, lines: list[str], number: int, what: str) -> int:
    """The int32 on header line ``number`` (1-based): the version or the entry count."""
    line = lines[number - 1]
    try:
        return parse_int(line, 32)
    except ValueError as exc:
        raise CorruptCheckpointError(
            path, None, f"malformed {what} line {line!r}", line=number
        ) from exc


def checkpoint_bytes(version: int, lines: Iterable[str]) -> bytes:
    items = list(lines)
    return "".join(f"{line}\n" for line in [str(version), str(len(items)), *items]).encode()


def _offset_entry(line: str) -> tuple[tuple[str, int], int]:
    topic, partition, offset = split_fields(line, 3)
    return (topic, parse_int(partition, 32)), parse_int(offset)


def read_offset_checkpoint(path: str | Path) -> dict[tuple[str, int], int]:
    """``{(topic, partition): offset}``; a repeated partition keeps its last line, as in Kafka."""
    return dict(read_checkpoint(path, OFFSET_CHECKPOINT_VERSION, _offset_entry))


def write_offset_checkpoint(path: str | Path, offsets: Mapping[tuple[str, int], int]) -> None:
    lines = [f"{topic} {partition} {offset}" for (topic, partition), offset in offsets.items()]
    write_atomically(path, checkpoint_bytes(OFFSET_CHECKPOINT_VERSION, lines))
