"""What the segment writes take: one value per write, so a caller names each fact once and a
new fact is a new field rather than one more argument on every write.

Who writes and when (``actor``, ``now_ms``) and the lease that fences the write stay
arguments of the store's methods: they describe the call, not the segment.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import TYPE_CHECKING, NamedTuple, Protocol

from tierflow.metadata.models import TIERFLOW_COPIER
from tierflow.metadata.states import RemoteLogSegmentState

if TYPE_CHECKING:  # kafka.batch_scan loads kafka-python: a store that only reads needs none
    from tierflow.kafka.batch_scan import ScannedFacts


class SegmentObject(NamedTuple):
    """One stored file of a segment, as given in ``SegmentTransition.objects``."""

    kind: str
    key: str
    size: int
    sha256: str


class EpochEntryLike(Protocol):
    epoch: int
    start_offset: int


class StartedSegment(NamedTuple):
    """A new segment as COPY_SEGMENT_STARTED records it: what the copy planned for it.

    ``owner`` defaults to the writing actor, ``tiered_epoch`` to the topic's current one.
    """

    segment_id: str
    topic_id: str
    partition: int
    start_offset: int
    end_offset: int
    max_timestamp_ms: int
    segment_leader_epochs: Sequence[tuple[int, int] | EpochEntryLike]
    segment_size_bytes: int
    txn_index_empty: bool
    leader_epoch: int | None = None
    tiered_epoch: int | None = None  # None: the topic's current one
    owner: str | None = None  # None: the actor that adds it
    custom_metadata: bytes | None = None
    writer: str = TIERFLOW_COPIER


class SegmentTransition(NamedTuple):
    """A move of one segment to ``dst``, and what is stored with it.

    ``only_from``: the states the caller decided on (others raise InvalidStateTransition).
    ``objects`` (kind, key, size, sha256) and ``scanned`` (what the copy's pass over the
    batches found: largest timestamp, leader epochs) go with COPY_SEGMENT_FINISHED only.
    """

    segment_id: str
    dst: RemoteLogSegmentState
    only_from: Collection[RemoteLogSegmentState] | None = None
    custom_metadata: bytes | None = None
    objects: Iterable[tuple[str, str, int, str]] | None = None
    scanned: ScannedFacts | None = None


class CompactedSegment(NamedTuple):
    """A segment the remote compaction built, as it turned out: recorded STARTED with its
    sources' totals (which bound these), it finishes with its real size and max timestamp."""

    segment_id: str
    objects: Iterable[tuple[str, str, int, str]]
    size_in_bytes: int
    max_timestamp_ms: int
