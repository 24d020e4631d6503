"""Which remote segments a restore writes: the partition's finished ones, in offset order.

A broker loads a log only if its segments follow one another without a gap, so a restore stops
with the segment that holds ``to_offset`` and refuses a partition whose finished segments leave
a hole (a segment deleted by retention in the middle cannot be, but a store edited by hand can).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

from tierflow.kafka.leader_epoch import EpochEntry, entries_before
from tierflow.metadata.epochs import epochs_from_segments
from tierflow.metadata.errors import UnknownTopicError
from tierflow.metadata.models import RemoteLogSegment, Topic
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.metadata.store import MetadataStore
from tierflow.metadata.topic_registry import RETIRED_MARK, kafka_topic_name
from tierflow.restore.cut import Cut
from tierflow.restore.errors import RestoreError
from tierflow.rsm import RemoteSegment
from tierflow.segment_refs import remote_segment

__all__ = ["RestoreError", "RestorePlan", "RestoredAs", "find_topic", "plan_restore"]


def find_topic(store: MetadataStore, name: str) -> Topic:
    """The registered topic of that name, or, once it was deleted, the retired one it left:
    its remote data stays restorable until remote_partition_removal has finished with it
    (TIERFLOW_REMOVAL_GRACE_S holds removal back)."""
    try:
        return store.topic(name)
    except UnknownTopicError:
        retired = [t for t in store.topics() if t.name.startswith(name + RETIRED_MARK)]
        if len(retired) == 1:
            return retired[0]
        if not retired:
            raise
        ids = ", ".join(t.topic_id for t in retired)
        raise RestoreError(f"{name}: deleted more than once (topic ids {ids}); name one") from None


@dataclass(frozen=True)
class RestoredAs:
    """The topic name and id the restored partitions carry: the topic's own, or a new one for
    a copy next to the live topic. Segment bytes never name their topic, so only the directory,
    ``partition.metadata`` and the checkpoint lines change."""

    name: str
    topic_id: str


@dataclass(frozen=True)
class RestorePlan:
    topic: Topic  # where the segments are in remote storage
    partition: int
    rows: list[RemoteLogSegment]
    log_dir: Path
    restored_as: RestoredAs
    cut: Cut | None = None  # set when the restore ends inside its last segment

    def sizes(self) -> list[int]:
        """The bytes written of each segment's ``.log``: the last one's up to the cut."""
        sizes = [row.segment_size_bytes for row in self.rows]
        if self.cut is not None:
            sizes[-1] = self.cut.size_in_bytes
        return sizes

    @property
    def name(self) -> str:
        return f"{self.restored_as.name}-{self.partition}"

    @property
    def directory(self) -> Path:
        return self.log_dir / self.name

    @property
    def segments(self) -> list[RemoteSegment]:
        return [remote_segment(self.topic, row) for row in self.rows]

    @property
    def size_in_bytes(self) -> int:
        return sum(self.sizes())

    @property
    def start_offset(self) -> int:
        return self.rows[0].start_offset

    @property
    def next_offset(self) -> int:
        return (self.cut.last_offset if self.cut else self.rows[-1].end_offset) + 1

    def leader_epochs(self) -> list[EpochEntry]:
        """The leader-epoch cache of the restored offsets, rebuilt from their segments.

        A segment's first epoch starts at its first batch, which in a compacted log can lie
        after the segment's base offset; a broker's cache covers its whole log (an epoch starts
        at the log end offset when its leader takes over), so the first entry starts at the
        restored log's start.
        """
        entries = entries_before(epochs_from_segments(self.rows), self.next_offset)
        if entries and entries[0].start_offset > self.start_offset:
            entries[0] = EpochEntry(entries[0].epoch, self.start_offset)
        return entries


def plan_restore(
    store: MetadataStore,
    topic: Topic,
    partition: int,
    log_dir: Path,
    to_offset: int | None,
    to_timestamp: int | None = None,
    restored_as: RestoredAs | None = None,
) -> RestorePlan:
    """The finished segments from the first up to the one holding ``to_offset``, or the first
    record at or after ``to_timestamp`` (ms; as Kafka's offsetsForTimes finds it); all of them
    when neither is given or no record is that late."""
    rows = store.segments(topic.topic_id, partition, states=[S.COPY_SEGMENT_FINISHED])
    rows = sorted(rows, key=lambda row: row.start_offset)
    name = f"{kafka_topic_name(topic.name)}-{partition}"
    if to_timestamp is not None:
        later = [row for row in rows if row.max_timestamp_ms >= to_timestamp]
        rows = rows[: rows.index(later[0]) + 1] if later else rows
    if to_offset is not None:
        if rows and to_offset < rows[0].start_offset:
            raise RestoreError(
                f"{name}: offset {to_offset} is below remote storage, which starts at offset "
                f"{rows[0].start_offset}"
            )
        rows = [row for row in rows if row.start_offset <= to_offset]
        if rows and rows[-1].end_offset < to_offset:
            raise RestoreError(
                f"{name}: offset {to_offset} is not in remote storage (the last remote offset "
                f"is {rows[-1].end_offset})"
            )
    if not rows:
        raise RestoreError(f"{name}: no segment in remote storage to restore")
    for before, after in pairwise(rows):
        if after.start_offset != before.end_offset + 1:
            raise RestoreError(
                f"{name}: remote segments leave a gap between offsets {before.end_offset} and "
                f"{after.start_offset}; a broker cannot load a log with a hole"
            )
    own = RestoredAs(kafka_topic_name(topic.name), topic.topic_id)
    return RestorePlan(topic, partition, rows, log_dir, restored_as or own)
