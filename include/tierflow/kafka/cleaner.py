"""What the broker's log cleaner has done, and is doing, to a compacted partition.

Read from the log dir, as the cleaner leaves it (``LogCleaner``, ``LogCleanerManager`` and
``LocalLog.replaceSegments`` in Kafka's storage module):

- ``cleaner-offset-checkpoint`` in the log dir's root holds each partition's first dirty
  offset: every offset below it has been through at least one cleaning pass. A partition the
  cleaner never cleaned has no entry.
- A pass writes each group of segments it rewrites as ``<base>.log.cleaned`` (and the group's
  ``.index``, ``.timeindex`` and ``.txnindex`` likewise), renames them to ``.swap``, schedules
  the segments they replace for deletion, then renames the ``.swap`` files into place. While
  a ``.cleaned`` or ``.swap`` file exists, the partition's segment files are being replaced,
  and a copy reading them could mix two generations of one segment.

A later pass rewrites segments below the checkpoint again (it cleans from the log start on
each pass), and may merge them into fewer, larger segments; it never changes an offset.
"""

from __future__ import annotations

from dataclasses import dataclass

from tierflow.kafka.checkpoint import CLEANER_OFFSET_CHECKPOINT
from tierflow.kafka.log_dir import PartitionLog

CLEANING_SUFFIXES = (".cleaned", ".swap")


@dataclass(frozen=True)
class CleanerState:
    first_dirty_offset: int | None  # None: never cleaned
    swapping: tuple[str, ...] = ()  # the .cleaned and .swap files of a pass under way

    def cleaned_below(self) -> int:
        """Offsets below this have been cleaned at least once (0: none)."""
        return self.first_dirty_offset or 0

    def copy_bound(self) -> int:
        """Offsets below this may be copied: none while a pass swaps segments in, else the
        cleaned ones (lifecycle/copy/compacted.py's rules 1 and 2)."""
        return 0 if self.swapping else self.cleaned_below()


def cleaner_state(log_: PartitionLog) -> CleanerState:
    """The partition's cleaner checkpoint entry and any pass under way, from one listing."""
    checkpoint = log_.log_dir.checkpoint(CLEANER_OFFSET_CHECKPOINT)
    swapping = sorted(p.name for p in log_.path.iterdir() if p.name.endswith(CLEANING_SUFFIXES))
    return CleanerState(checkpoint.get(log_.key), tuple(swapping))
