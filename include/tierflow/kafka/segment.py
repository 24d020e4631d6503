"""One log segment: a ``.log`` file and its sibling index files, named by base offset."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tierflow.kafka.batch_scan import BatchFacts, BatchScan
from tierflow.kafka.errors import KafkaFormatError, MissingFileError
from tierflow.kafka.leader_epoch import EpochEntry
from tierflow.kafka.naming import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    offset_prefix,
    parse_offset_prefix,
)
from tierflow.kafka.offset_index import OffsetIndex, OffsetPosition

if TYPE_CHECKING:
    from tierflow.kafka.record_batch import BatchHeader

_READ = 1 << 20  # a last offset reads the bytes after an index entry: a few KiB, most often


def _sibling(suffix: str) -> property:
    """A read-only path property: the segment's file with ``suffix``, named like its ``.log``."""
    return property(lambda segment: segment._file(suffix))


@dataclass(frozen=True)
class LogSegment:
    base_offset: int
    directory: Path

    @classmethod
    def from_log_path(cls, log_path: str | Path) -> LogSegment:
        path = Path(log_path)
        return cls(parse_offset_prefix(path.name), path.parent)

    def _file(self, suffix: str) -> Path:
        return self.directory / f"{offset_prefix(self.base_offset)}{suffix}"

    log_path = _sibling(LOG_SUFFIX)
    index_path = _sibling(INDEX_SUFFIX)
    time_index_path = _sibling(TIME_INDEX_SUFFIX)
    txn_index_path = _sibling(TXN_INDEX_SUFFIX)

    def size_in_bytes(self) -> int:
        return self.log_path.stat().st_size

    def batches(self, *, validate_crc: bool = True) -> Iterator[BatchHeader]:
        # Imported here: kafka-python's record classes load its whole client (0.1-0.2 s), and
        # listing a log dir (status, a copy's plan) reads no batch.
        from tierflow.kafka.record_batch import iter_batches

        return iter_batches(self.log_path, validate_crc=validate_crc)

    def largest_timestamp(self) -> int:
        """Max batch timestamp (-1 if none): what time-based retention compares against."""
        return max((b.max_timestamp for b in self.batches(validate_crc=False)), default=-1)

    def leader_epochs(self) -> list[EpochEntry]:
        """(epoch, first offset with it), ascending, from the batches themselves.

        Legacy batches carry no epoch (-1) and are skipped; like Kafka's epoch cache, an epoch
        lower than one already seen does not start a new entry.
        """
        entries: list[EpochEntry] = []
        for batch in self.batches(validate_crc=False):
            epoch = batch.partition_leader_epoch
            if epoch >= 0 and (not entries or epoch > entries[-1].epoch):
                entries.append(EpochEntry(epoch, batch.base_offset))
        return entries

    def last_offset(self) -> int | None:
        """Last offset of the last batch; None for an empty segment.

        As Kafka's ``LogSegment.readNextOffset``: the walk starts at the offset index's last
        entry, so an active segment costs the batches after it, not all of them (512 MiB of
        small batches is 70,000 headers, a second, and a copy and retention ask for every
        partition each run). An entry the log does not bear out (past its end, not at a batch
        holding its offset) is not trusted: the walk then starts at byte 0, which names any
        fault of the log. Sound v2 batches are checked by the batch scan (CRC32C in C); only
        a legacy message or a fault loads kafka-python, so a copy's plan does not."""
        entry = self._last_index_entry()
        if entry is not None and entry.position >= 0:
            with suppress(KafkaFormatError):
                found = self._scanned_from(entry.position)
                if found is not None and found[0] <= entry.offset <= found[1]:
                    return found[1]
        try:
            found = self._scanned_from(0)
        except KafkaFormatError:
            found = self._walked_from_start()  # without CRCs: the offsets, or the fault named
        return None if found is None else found[1]

    def _last_index_entry(self) -> OffsetPosition | None:
        try:
            return OffsetIndex.last_entry(self.index_path, self.base_offset)
        except MissingFileError:
            return None

    def _scanned_from(self, position: int) -> tuple[int, int] | None:
        """The first batch's base offset and the last batch's last offset from byte
        ``position``, every batch checked; None when there is none. Bytes a broker appends
        meanwhile are not read: the file's size when opened is the end."""
        with open(self.log_path, "rb") as log_file:
            end = os.fstat(log_file.fileno()).st_size
            scan = BatchScan(str(self.log_path), position, end)
            log_file.seek(position)
            found: list[BatchFacts] = []
            while position < end:
                chunk = log_file.read(min(_READ, end - position))
                if not chunk:
                    break
                found += scan.feed(chunk)
                position += len(chunk)
        found += scan.finish()
        return (found[0].base_offset, found[-1].last_offset) if found else None

    def _walked_from_start(self) -> tuple[int, int] | None:
        """The same from record_batch's walk, which reads headers only (a CRC mismatch is no
        fault here) and names any fault of the framing."""
        first = last = None
        for batch in self.batches(validate_crc=False):
            first = batch.base_offset if first is None else first
            last = batch.last_offset
        return None if first is None or last is None else (first, last)

    def has_txn_index(self) -> bool:
        return self.txn_index_path.is_file()
