"""One log segment: a ``.log`` file and its sibling index files, named by base offset."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tierflow.kafka.leader_epoch import EpochEntry
from tierflow.kafka.naming import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    offset_prefix,
    parse_offset_prefix,
)

if TYPE_CHECKING:
    from tierflow.kafka.record_batch import BatchHeader


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
        """Last offset of the last batch; None for an empty segment."""
        last = None
        for batch in self.batches(validate_crc=False):
            last = batch.last_offset
        return last

    def has_txn_index(self) -> bool:
        return self.txn_index_path.is_file()
