"""Calls into a RemoteStorageManager that count how many bytes came from remote storage.

A storage manager that knows better (the chunked one reads whole chunks, possibly compressed,
and keeps a ``bytes_read`` counter) is asked; for others the bytes returned are what was read.
"""

from __future__ import annotations

from collections.abc import Callable

from tierflow.rsm import (
    IndexType,
    RemoteSegment,
    RemoteStorageManager,
)


class RemoteReads:
    def __init__(self, rsm: RemoteStorageManager) -> None:
        self.rsm = rsm
        self.bytes_read = 0

    def fetch_log(self, segment: RemoteSegment, start: int, end_inclusive: int) -> bytes:
        return self._counted(lambda: self.rsm.fetch_log_segment(segment, start, end_inclusive))

    def fetch_index(self, segment: RemoteSegment, index_type: IndexType) -> bytes:
        return self._counted(lambda: self.rsm.fetch_index(segment, index_type))

    def _counted(self, call: Callable[[], bytes]) -> bytes:
        before = getattr(self.rsm, "bytes_read", None)
        data = call()
        after = getattr(self.rsm, "bytes_read", None)
        if isinstance(before, int) and isinstance(after, int):
            self.bytes_read += after - before
        else:
            self.bytes_read += len(data)
        return data
