"""Crash-safe file replacement, the way Kafka writes its checkpoint files."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from tierflow.kafka.errors import MissingFileError


def write_atomically(path: str | Path, data: bytes) -> None:
    """Write ``<path>.tmp``, fsync it, rename over ``path`` and fsync the directory.

    A reader (or a broker restarting after a crash) then sees either the old or the new file,
    never a half-written one.
    """
    target = Path(path)
    tmp = target.with_name(target.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, target)
    # Directory fsync makes the rename durable; not every platform allows opening a directory.
    with contextlib.suppress(OSError):
        fd = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def read_file_bytes(path: str | Path) -> bytes:
    """The whole file; a missing file becomes MissingFileError so callers catch one family."""
    try:
        return Path(path).read_bytes()
    except FileNotFoundError as exc:
        raise MissingFileError(path, None, "file does not exist") from exc
