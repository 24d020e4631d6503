"""The cache's files: Kafka's layout, names, and reading each index file with its checks."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

from tierflow.kafka import txn_index
from tierflow.kafka.errors import CorruptIndexError, KafkaFormatError, MissingFileError
from tierflow.kafka.offset_index import OffsetIndex
from tierflow.kafka.time_index import TimeIndex
from tierflow.kafka.txn_index import read_txn_index
from tierflow.rsm import IndexType, RemoteSegment

DIR_NAME = "remote-log-index-cache"
TMP_SUFFIX = ".tmp"
DELETED_SUFFIX = ".deleted"
SUFFIXES: dict[IndexType, str] = {
    IndexType.OFFSET: ".index",
    IndexType.TIMESTAMP: ".timeindex",
    IndexType.TRANSACTION: ".txnindex",
}


class IndexCacheError(Exception):
    """An index that cannot be cached: remote storage returned a corrupt one."""


def file_prefix(start_offset: int, segment_id: str) -> str:
    """Kafka's generateFileNamePrefixForIndex: ``<startOffset>_<segmentId>``, not padded."""
    return f"{start_offset}_{segment_id}"


def parse_file_name(name: str) -> tuple[int, str, str] | None:
    """(start offset, segment id, suffix) of a cache file name; None for anything else."""
    for suffix in SUFFIXES.values():
        if name.endswith(suffix):
            start, sep, segment_id = name[: -len(suffix)].partition("_")
            if sep and start.isdigit() and segment_id:
                return int(start), segment_id, suffix
    return None


@dataclass
class OnDisk:
    prefix: str
    suffixes: set[str]
    size_bytes: int
    mtime: float


def read_cache_file(
    index_type: IndexType, path: Path, segment: RemoteSegment, *, fetched_as: str | None = None
) -> object:
    """Read one cache file with its format's checks; CorruptIndexError names what is wrong.

    ``fetched_as`` marks a just-fetched ``.tmp`` file: a failure there is remote storage's,
    reported as IndexCacheError naming the segment.
    """
    try:
        return read_checked(index_type, path, segment)
    except KafkaFormatError as exc:
        if fetched_as is None:
            raise
        raise IndexCacheError(
            f"{segment.describe()}: the {index_type.value} index from remote storage is "
            f"corrupt: {exc.reason}"
        ) from exc


def read_checked(index_type: IndexType, path: Path, segment: RemoteSegment) -> object:
    if index_type is IndexType.OFFSET:
        index = OffsetIndex.read(path, segment.start_offset)
        if index.entries and index.entries[-1].offset > segment.end_offset:
            raise CorruptIndexError(
                path,
                None,
                f"last entry is for offset {index.entries[-1].offset}, past the segment's end "
                f"offset {segment.end_offset}",
            )
        return index
    if index_type is IndexType.TIMESTAMP:
        return TimeIndex.read(path, segment.start_offset, last_offset=segment.end_offset)
    size = path.stat().st_size
    if size % txn_index.ENTRY.size:
        raise CorruptIndexError(
            path,
            size - size % txn_index.ENTRY.size,
            f"transaction index size {size} is not a multiple of the "
            f"{txn_index.ENTRY.size}-byte entry size",
        )
    return read_txn_index(path, base_offset=segment.start_offset)


def is_complete(found: OnDisk) -> bool:
    return len(found.suffixes) == len(SUFFIXES)


def file_size(path: Path) -> int:
    """The file's size; a file gone meanwhile reads as missing, i.e. corrupt, and is fetched."""
    try:
        return path.stat().st_size
    except FileNotFoundError as exc:
        raise MissingFileError(path, None, "removed while loading") from exc


def file_mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except FileNotFoundError:
        return 0.0


def unlink_quietly(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


def fsync_directory(directory: Path) -> None:
    """Make the renames durable; not every platform can open a directory."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
