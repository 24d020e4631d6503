"""One remote segment written back as the files a broker keeps for it.

The indexes and the producer snapshot come first and the ``.log`` last, each under a temporary
name, fsynced and renamed; a complete ``.log`` therefore says that the segment is complete, and
a restore killed at any point rewrites only the segment it was in. The ``.log`` is checked
against the size the metadata store recorded before it takes its name.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import BinaryIO

from tierflow.faults import crash_point
from tierflow.kafka import naming
from tierflow.restore.cut import Cut, cut_log, cut_offset_index, cut_time_index, cut_txn_index
from tierflow.rsm import IndexType, RemoteResourceNotFoundError, RemoteSegment, RemoteStorageManager

TEMPORARY_SUFFIX = ".restoring"


def segment_file_names(segment: RemoteSegment) -> list[str]:
    """Every file the segment may leave in its partition directory, as the broker names it."""
    prefix = naming.offset_prefix(segment.start_offset)
    names = [prefix + suffix for suffix in naming.SEGMENT_SUFFIXES]
    return [*names, naming.offset_prefix(segment.end_offset + 1) + naming.SNAPSHOT_SUFFIX]


def log_path(directory: Path, segment: RemoteSegment) -> Path:
    return directory / (naming.offset_prefix(segment.start_offset) + naming.LOG_SUFFIX)


def is_restored(directory: Path, segment: RemoteSegment, size: int) -> bool:
    path = log_path(directory, segment)
    return path.is_file() and path.stat().st_size == size


def clear_segment(directory: Path, segment: RemoteSegment) -> None:
    """Every file an earlier write of the segment left, complete or not: a segment written
    again (now cut elsewhere, or not cut) leaves nothing of the other version behind."""
    for name in segment_file_names(segment):
        (directory / name).unlink(missing_ok=True)
        (directory / (name + TEMPORARY_SUFFIX)).unlink(missing_ok=True)


def write_segment(
    rsm: RemoteStorageManager,
    segment: RemoteSegment,
    size: int,
    directory: Path,
    cut: Cut | None = None,
) -> None:
    """The segment's indexes, producer snapshot and ``.log``, in that order; with ``cut``,
    the segment as it ends at the cut, without its snapshot (``restore.cut``)."""
    prefix = naming.offset_prefix(segment.start_offset)
    offsets = rsm.fetch_index(segment, IndexType.OFFSET)
    times = rsm.fetch_index(segment, IndexType.TIMESTAMP)
    if cut is not None:
        offsets, times = (
            cut_offset_index(offsets, segment, cut),
            cut_time_index(times, segment, cut),
        )
    write_file(directory / (prefix + naming.INDEX_SUFFIX), [offsets])
    write_file(directory / (prefix + naming.TIME_INDEX_SUFFIX), [times])
    txn = _optional_index(rsm, segment, IndexType.TRANSACTION)
    if txn:
        txn = cut_txn_index(txn, segment, cut) if cut is not None else txn
        write_file(directory / (prefix + naming.TXN_INDEX_SUFFIX), [txn])
    snapshot = _optional_index(rsm, segment, IndexType.PRODUCER_SNAPSHOT)
    if snapshot is not None and cut is None:
        name = naming.offset_prefix(segment.end_offset + 1) + naming.SNAPSHOT_SUFFIX
        write_file(directory / name, [snapshot])
    crash_point("restore.before_log")
    chunks = rsm.iter_log_segment(segment)
    if cut is not None:
        chunks, size = cut_log(chunks, cut), cut.size_in_bytes
    write_file(log_path(directory, segment), chunks, expected=size)
    fsync_directory(directory)


def _optional_index(
    rsm: RemoteStorageManager, segment: RemoteSegment, index: IndexType
) -> bytes | None:
    try:
        return rsm.fetch_index(segment, index)
    except RemoteResourceNotFoundError:
        return None


def write_file(path: Path, chunks: Iterable[bytes], *, expected: int | None = None) -> None:
    """``chunks`` to ``path`` through a temporary name: written, fsynced, checked, renamed."""
    tmp = path.with_name(path.name + TEMPORARY_SUFFIX)
    with open(tmp, "wb") as out:
        size = _write_behind(out, chunks)
        out.flush()
        os.fsync(out.fileno())
    if expected is not None and size != expected:
        tmp.unlink(missing_ok=True)
        raise ValueError(f"{path}: remote storage returned {size} bytes, {expected} recorded")
    os.replace(tmp, path)


def _write_behind(out: BinaryIO, chunks: Iterable[bytes]) -> int:
    """Write each chunk on a thread while the next one is read and decoded: a restore is
    bound by the disk, whose writes block once the page cache holds enough dirty pages, and
    the decoding (zstd, AES-GCM) and the write both release the GIL."""
    size = 0
    with ThreadPoolExecutor(1, thread_name_prefix="restore-write") as writer:
        pending: Future | None = None
        for chunk in chunks:
            if pending is not None:
                pending.result()
            pending = writer.submit(out.write, chunk)
            size += len(chunk)
        if pending is not None:
            pending.result()
    return size


def fsync_directory(directory: Path) -> None:
    """Make the renames in ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
