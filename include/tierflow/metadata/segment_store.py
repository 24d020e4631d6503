"""The RemoteLogSegmentState machine: add, transition, and the segment queries.

Every transition is one conditional UPDATE whose WHERE clause names the state it starts
from, so when several workers race the database picks exactly one winner (rowcount 1) and
the others re-read. The event row (and, on COPY_SEGMENT_FINISHED, the object rows and the
partition's highest_remote_offset) is written in the same transaction. What each write
takes (StartedSegment, SegmentTransition, CompactedSegment) lives in segment_writes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from itertools import pairwise
from typing import TYPE_CHECKING, Any, NamedTuple

from sqlalchemy import Connection, bindparam, func, insert, text, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select

from tierflow.metadata.errors import InvalidStateTransition, MetadataError, UnknownSegmentError
from tierflow.metadata.events import Event, EventEntity, Subject, append_event
from tierflow.metadata.models import (
    Partition,
    RemoteLogSegment,
    RemoteSegmentObject,
    SegmentObjectKind,
)
from tierflow.metadata.partition_registry import Lease, hold_lease
from tierflow.metadata.segment_writes import (
    CompactedSegment,
    EpochEntryLike,
    SegmentTransition,
    StartedSegment,
)
from tierflow.metadata.states import SEGMENT_SOURCES, RemoteLogSegmentState
from tierflow.metadata.store_base import (
    MAX_ATTEMPTS,
    StoreBase,
    found_or_raise,
    partition_key,
    update_and_record,
)

if TYPE_CHECKING:  # kafka.batch_scan loads kafka-python: a store that only reads needs none
    from tierflow.kafka.batch_scan import ScannedFacts

# Ids bound in one IN (...) query: well under SQLite's and PostgreSQL's limits on parameters.
IN_QUERY_IDS = 500


class SegmentStates(dict[str, RemoteLogSegmentState]):
    """States by segment id; looking up one the store does not hold raises, as ``segment()``
    does."""

    def __missing__(self, segment_id: str) -> RemoteLogSegmentState:
        raise unknown_segment(segment_id)


def unknown_segment(segment_id: str) -> UnknownSegmentError:
    return UnknownSegmentError(f"unknown remote log segment {segment_id!r}")


class SegmentSummary(NamedTuple):
    """The columns retention planning reads, loaded without ORM objects (a store may hold
    millions of rows). Has the attributes of RemoteLogSegment that planning uses."""

    segment_id: str
    start_offset: int
    end_offset: int
    max_timestamp_ms: int
    segment_leader_epochs: str
    segment_size_bytes: int
    state: str
    created_ms: int

    @property
    def leader_epochs(self) -> list[tuple[int, int]]:
        return decode_leader_epochs(self.segment_leader_epochs)


def decode_leader_epochs(text: str) -> list[tuple[int, int]]:
    """``segment_leader_epochs`` as written by add_segment (``[[e, s], [e, s]]``), decoded
    without the json module when it has that exact shape: planning decodes millions."""
    try:
        pairs = [pair.split(",") for pair in text[2:-2].split("], [")]
        return [(int(epoch), int(start)) for epoch, start in pairs]
    except ValueError:
        return [(int(epoch), int(start)) for epoch, start in json.loads(text)]


class FinishedObject(NamedTuple):
    """An object row of a COPY_SEGMENT_FINISHED segment: what its key must hold."""

    segment_id: str
    kind: str
    size: int


# Plain SQL: its result rows skip SQLAlchemy's per-column type processing, which is most of the
# cost of reading a million rows; the columns are already ints and strings in every driver.
_SUMMARY_QUERY = text(
    f"SELECT {', '.join(SegmentSummary._fields)} FROM remote_log_segments "
    "WHERE topic_id = :t AND partition = :p AND state IN :s"
).bindparams(bindparam("s", expanding=True))


class _Move(NamedTuple):
    """A segment transition as decided from the row read: the UPDATE's values, and the object
    rows to store when it finishes a copy (None for every other transition)."""

    segment: RemoteLogSegment
    src: RemoteLogSegmentState
    dst: RemoteLogSegmentState
    values: dict[str, Any]
    object_rows: list[dict[str, Any]] | None


class _Starting(NamedTuple):
    """Who starts segments, when, and the topic's tiered epoch at the time."""

    actor: str
    now_ms: int
    tiered_epoch: int


def _started_row(started: StartedSegment, how: _Starting) -> dict[str, Any]:
    """The COPY_SEGMENT_STARTED row, checked as Kafka checks a new segment's metadata."""
    segment_id = started.segment_id
    epochs = _leader_epoch_pairs(segment_id, started.segment_leader_epochs)
    _check_new_segment(
        segment_id,
        epochs,
        started.leader_epoch,
        started.start_offset,
        started.end_offset,
        started.segment_size_bytes,
    )
    return {
        "segment_id": segment_id,
        "topic_id": started.topic_id,
        "partition": started.partition,
        "start_offset": started.start_offset,
        "end_offset": started.end_offset,
        "max_timestamp_ms": started.max_timestamp_ms,
        "leader_epoch": epochs[-1][0],
        "segment_leader_epochs": json.dumps([list(pair) for pair in epochs]),
        "segment_size_bytes": started.segment_size_bytes,
        "state": RemoteLogSegmentState.COPY_SEGMENT_STARTED.value,
        "tiered_epoch": how.tiered_epoch if started.tiered_epoch is None else started.tiered_epoch,
        "event_timestamp_ms": how.now_ms,
        "custom_metadata": started.custom_metadata,
        "txn_index_empty": started.txn_index_empty,
        "writer": started.writer,
        "owner": how.actor if started.owner is None else started.owner,
        "created_ms": how.now_ms,
    }


class SegmentStore(StoreBase):
    def add_segment(
        self, started: StartedSegment, *, actor: str, now_ms: int, lease: Lease | None = None
    ) -> RemoteLogSegment:
        """null -> COPY_SEGMENT_STARTED: the row and its event in one transaction.

        Adding the same segment again while it is still COPY_SEGMENT_STARTED is Kafka's
        self-transition: the existing row comes back and no event is written. With ``lease``,
        nothing is written unless it is still the partition's current lease (LeaseLostError).
        """
        topic = self.topic_by_id(started.topic_id)
        self._require_partition(started.topic_id, started.partition)
        how = _Starting(actor, now_ms, topic.tiered_epoch)
        return self._add_started(_started_row(started, how), actor=actor, lease=lease)

    def start_segments(
        self,
        started: Sequence[StartedSegment],
        *,
        actor: str,
        now_ms: int,
        lease: Lease | None = None,
    ) -> None:
        """null -> COPY_SEGMENT_STARTED for the fresh segments a copy planned in one
        partition: every row and event in one transaction, fenced by ``lease``. A copy
        starts many segments a run, and one commit each was most of its store writes."""
        if not started:
            return
        first = started[0]
        topic = self.topic_by_id(first.topic_id)
        self._require_partition(first.topic_id, first.partition)
        how = _Starting(actor, now_ms, topic.tiered_epoch)
        rows = [_started_row(segment, how) for segment in started]
        with self._write() as connection:
            if lease is not None:
                hold_lease(connection, lease)
            connection.execute(insert(RemoteLogSegment), rows)
            for row in rows:
                append_event(connection, _started_event(row, actor))

    def _add_started(
        self, row: dict[str, Any], *, actor: str, lease: Lease | None
    ) -> RemoteLogSegment:
        """Insert the row, or hand back the one a first add (or a racing one) wrote."""
        segment_id = row["segment_id"]
        existing = self.find_segment(segment_id)
        if existing is None:
            try:
                self._insert_started(row, actor=actor, lease=lease)
                return self.segment(segment_id)
            except IntegrityError:
                existing = self.find_segment(segment_id)
                if existing is None:
                    raise
        return _same_segment_or_raise(existing, row)

    def _insert_started(self, row: dict[str, Any], *, actor: str, lease: Lease | None) -> None:
        """The COPY_SEGMENT_STARTED row and its event: one transaction, fenced by ``lease``."""
        with self._write() as connection:
            if lease is not None:
                hold_lease(connection, lease)
            connection.execute(insert(RemoteLogSegment).values(**row))
            append_event(connection, _started_event(row, actor))

    def transition_segment(
        self,
        transition: SegmentTransition,
        *,
        actor: str,
        now_ms: int,
        lease: Lease | None = None,
    ) -> bool:
        """Move the segment to ``transition.dst``: True if this call did it, False if already
        there.

        Raises InvalidStateTransition when Kafka's machine forbids it, or when the segment is
        in none of ``only_from`` (the UPDATE names the state it found, so a concurrent change
        is never overwritten). With ``lease``, nothing is written unless it is still the
        partition's current lease (LeaseLostError). On COPY_SEGMENT_FINISHED the ``objects``
        are stored and the partition's ``highest_remote_offset`` is raised to end_offset if
        below, in the same transaction.
        """
        return self._move_segment(transition, None, actor=actor, now_ms=now_ms, lease=lease)

    def finish_compacted_segment(
        self, compacted: CompactedSegment, *, actor: str, now_ms: int, lease: Lease | None = None
    ) -> bool:
        """COPY_SEGMENT_FINISHED for a segment the remote compaction built, with its objects
        and what it turned out to be (size, max timestamp); otherwise as transition_segment."""
        finished = RemoteLogSegmentState.COPY_SEGMENT_FINISHED
        transition = SegmentTransition(compacted.segment_id, finished, objects=compacted.objects)
        built = (compacted.size_in_bytes, compacted.max_timestamp_ms)
        return self._move_segment(transition, built, actor=actor, now_ms=now_ms, lease=lease)

    def _move_segment(
        self,
        transition: SegmentTransition,
        built: tuple[int, int] | None,
        *,
        actor: str,
        now_ms: int,
        lease: Lease | None,
    ) -> bool:
        """transition_segment, and for a compacted segment ``built`` (size in bytes, max
        timestamp): re-read and retry while other workers win the race."""
        dst = RemoteLogSegmentState(transition.dst)
        transition = transition._replace(dst=dst)
        segment_id, only_from = transition.segment_id, transition.only_from
        finished_state = RemoteLogSegmentState.COPY_SEGMENT_FINISHED
        finished = dst is finished_state
        stored = (transition.objects, built, transition.scanned)
        if any(given is not None for given in stored) and not finished:
            raise ValueError(
                f"segment {segment_id}: objects are only stored on {finished_state}, not {dst}"
            )
        object_rows = _object_rows(segment_id, transition.objects or [])
        for _ in range(MAX_ATTEMPTS):
            current = self.segment(segment_id)
            src = current.segment_state
            if src is dst:
                return False
            if src not in SEGMENT_SOURCES[dst] or (only_from is not None and src not in only_from):
                raise InvalidStateTransition("segment", segment_id, src, dst)
            values = _moved_values(transition, built, now_ms)
            move = _Move(current, src, dst, values, object_rows if finished else None)
            if self._apply_move(move, actor=actor, now_ms=now_ms, lease=lease):
                return True
            # another worker moved it first; re-read and decide again
        raise MetadataError(f"segment {segment_id}: gave up after {MAX_ATTEMPTS} races")

    def _apply_move(self, move: _Move, *, actor: str, now_ms: int, lease: Lease | None) -> bool:
        """One transaction: the UPDATE naming the state read and its event, then (on
        COPY_SEGMENT_FINISHED) the objects and the highest remote offset. False if the UPDATE
        lost."""
        segment, rows = move.segment, move.object_rows
        where = (
            col(RemoteLogSegment.segment_id) == segment.segment_id,
            col(RemoteLogSegment.state) == move.src.value,
        )
        details = None if rows is None else {"objects": len(rows)}
        subject = _segment_subject(EventEntity.SEGMENT, segment)
        event = Event(subject, move.dst, actor, now_ms, from_state=move.src, details=details)
        with self._write() as connection:
            if lease is not None:
                hold_lease(connection, lease)
            if not update_and_record(connection, RemoteLogSegment, where, move.values, event):
                return False
            if rows is not None:
                _store_finished_copy(connection, segment, rows)
        return True

    def update_segment_object(
        self,
        segment_id: str,
        kind: str,
        key: str,
        size: int,
        sha256: str,
        *,
        actor: str,
        now_ms: int,
    ) -> None:
        """Record that an object of a finished segment was rewritten in place (a re-wrapped
        manifest): its row gets the new size and checksum, and an event says who and when.

        The segment keeps its state: the event has its own entity (``segment_object``) so that
        replaying the segment state machine never sees it.
        """
        kind_name = _object_rows(segment_id, [(kind, key, size, sha256)])[0]["kind"]
        current = self.segment(segment_id)
        where = (
            col(RemoteSegmentObject.segment_id) == segment_id,
            col(RemoteSegmentObject.kind) == kind_name,
        )
        values = {"key": key, "size": size, "sha256": sha256}
        subject = _segment_subject(EventEntity.SEGMENT_OBJECT, current)
        details = {"object_updated": kind_name, **values}
        event = Event(subject, current.segment_state, actor, now_ms, details=details)
        with self._write() as connection:
            if not update_and_record(connection, RemoteSegmentObject, where, values, event):
                raise MetadataError(
                    f"segment {segment_id}: no {kind_name} object recorded to update"
                )

    def segment(self, segment_id: str) -> RemoteLogSegment:
        return found_or_raise(
            self.find_segment(segment_id),
            lambda: unknown_segment(segment_id),
        )

    def segment_states(self, segment_ids: Sequence[str]) -> SegmentStates:
        """Each segment's state by id, IN_QUERY_IDS ids a query: a rewrite checks every segment
        of its batch again (one query per segment took 2 s per 2,240 segments)."""
        states = SegmentStates()
        with self._session() as session:
            for start in range(0, len(segment_ids), IN_QUERY_IDS):
                chunk = segment_ids[start : start + IN_QUERY_IDS]
                query = select(RemoteLogSegment.segment_id, RemoteLogSegment.state).where(
                    col(RemoteLogSegment.segment_id).in_(chunk)
                )
                states.update((i, RemoteLogSegmentState(s)) for i, s in session.exec(query))
        return states

    def segment_objects(self, segment_id: str) -> list[RemoteSegmentObject]:
        query = (
            select(RemoteSegmentObject)
            .where(col(RemoteSegmentObject.segment_id) == segment_id)
            .order_by(col(RemoteSegmentObject.kind))
        )
        return self._all(query)

    def segments(
        self,
        topic_id: str,
        partition: int,
        *,
        states: Iterable[RemoteLogSegmentState] | None = None,
    ) -> list[RemoteLogSegment]:
        """The partition's segments by start offset (then age); all states unless filtered."""
        query = select(RemoteLogSegment).where(
            *partition_key(RemoteLogSegment, topic_id, partition),
        )
        if states is not None:
            names = [RemoteLogSegmentState(state).value for state in states]
            query = query.where(col(RemoteLogSegment.state).in_(names))
        query = query.order_by(
            col(RemoteLogSegment.start_offset),
            col(RemoteLogSegment.created_ms),
            col(RemoteLogSegment.segment_id),
        )
        return self._all(query)

    def segment_summaries(
        self, topic_id: str, partition: int, *, states: Iterable[RemoteLogSegmentState]
    ) -> list[SegmentSummary]:
        """Like ``segments`` but as plain tuples, for planning over large stores.

        The WHERE clause matches ix_remote_log_segments_tp_state (one index range per state),
        so DELETE_SEGMENT_FINISHED tombstones are never read; the runs come back sorted by
        state and are merged by start offset here (linear: timsort merges sorted runs).
        """
        names = [RemoteLogSegmentState(state).value for state in states]
        with self.engine.connect() as connection:
            result = connection.execute(_SUMMARY_QUERY, {"t": topic_id, "p": partition, "s": names})
            rows = list(map(SegmentSummary._make, result.fetchall()))
        rows.sort(key=lambda r: (r.start_offset, r.created_ms, r.segment_id))
        return rows

    def finished_objects(self, topic_id: str, partition: int) -> dict[str, FinishedObject]:
        """The object rows of the partition's COPY_SEGMENT_FINISHED segments, by key.

        One query, joined to the segments through ix_remote_log_segments_tp_state, so a
        partition's objects are checked without a query per segment.
        """
        obj, seg = RemoteSegmentObject, RemoteLogSegment
        query = (
            select(col(obj.key), col(obj.segment_id), col(obj.kind), col(obj.size))
            .join(seg, col(seg.segment_id) == col(obj.segment_id))
            .where(
                *partition_key(seg, topic_id, partition),
                col(seg.state) == RemoteLogSegmentState.COPY_SEGMENT_FINISHED.value,
            )
        )
        with self.engine.connect() as connection:
            rows = connection.execute(query).all()
        return {key: FinishedObject(segment, kind, int(size)) for key, segment, kind, size in rows}

    def partitions_with_segments(
        self, states: Iterable[RemoteLogSegmentState], topic_id: str | None = None
    ) -> set[tuple[str, int]]:
        """(topic id, partition) of every partition (of ``topic_id``, if given) with a segment
        in one of ``states``.

        One query for the whole cluster, so planning a run costs no query per partition.
        """
        names = [RemoteLogSegmentState(state).value for state in states]
        query = (
            select(col(RemoteLogSegment.topic_id), col(RemoteLogSegment.partition))
            .where(col(RemoteLogSegment.state).in_(names))
            .distinct()
        )
        if topic_id is not None:
            query = query.where(col(RemoteLogSegment.topic_id) == topic_id)
        with self.engine.connect() as connection:
            return {(topic_id, int(partition)) for topic_id, partition in connection.execute(query)}

    def finished_partitions(self, topic_id: str) -> list[int]:
        """The topic's partitions with a COPY_SEGMENT_FINISHED segment, in order: what a
        restore or an export can read from the bucket."""
        found = self.partitions_with_segments(
            [RemoteLogSegmentState.COPY_SEGMENT_FINISHED], topic_id
        )
        return sorted(partition for _, partition in found)

    def highest_remote_offset(self, topic_id: str, partition: int) -> int:
        """Max end offset over COPY_SEGMENT_FINISHED segments, -1 if none.

        Unlike ``Partition.highest_remote_offset`` (Kafka's forward-only highestLogOffset) this
        drops when finished segments start being deleted.
        """
        query = select(func.max(RemoteLogSegment.end_offset)).where(
            *partition_key(RemoteLogSegment, topic_id, partition),
            col(RemoteLogSegment.state) == RemoteLogSegmentState.COPY_SEGMENT_FINISHED.value,
        )
        with self._session() as session:
            highest = session.exec(query).one()
        return -1 if highest is None else int(highest)

    def find_segment(self, segment_id: str) -> RemoteLogSegment | None:
        return self._get(RemoteLogSegment, segment_id)


def _segment_subject(entity: EventEntity, segment: RemoteLogSegment) -> Subject:
    return Subject(entity, segment.topic_id, segment.partition, segment.segment_id)


def _started_event(row: dict[str, Any], actor: str) -> Event:
    """The event of a new COPY_SEGMENT_STARTED row: its offsets and size in the details."""
    subject = Subject(EventEntity.SEGMENT, row["topic_id"], row["partition"], row["segment_id"])
    details = {name: row[name] for name in ("start_offset", "end_offset", "segment_size_bytes")}
    started = RemoteLogSegmentState.COPY_SEGMENT_STARTED
    return Event(subject, started, actor, row["created_ms"], details=details)


def _moved_values(
    transition: SegmentTransition, built: tuple[int, int] | None, now_ms: int
) -> dict[str, Any]:
    """The columns a transition's UPDATE sets: the state, when, and what it stores with it."""
    values: dict[str, Any] = {"state": transition.dst.value, "event_timestamp_ms": now_ms}
    if transition.custom_metadata is not None:
        values["custom_metadata"] = transition.custom_metadata
    if built is not None:
        values["segment_size_bytes"], values["max_timestamp_ms"] = built
    if transition.scanned is not None:
        values.update(_scanned_values(transition.segment_id, transition.scanned))
    return values


def _scanned_values(segment_id: str, scanned: ScannedFacts) -> dict[str, Any]:
    values: dict[str, Any] = {"max_timestamp_ms": scanned.max_timestamp_ms}
    if scanned.log_crc32c is not None:
        values["log_crc32c"] = scanned.log_crc32c
    if scanned.leader_epochs is not None:
        epochs = _leader_epoch_pairs(segment_id, scanned.leader_epochs)
        values["leader_epoch"] = epochs[-1][0]
        values["segment_leader_epochs"] = json.dumps([list(pair) for pair in epochs])
    return values


def _leader_epoch_pairs(
    segment_id: str, entries: Sequence[tuple[int, int] | EpochEntryLike]
) -> list[tuple[int, int]]:
    """(epoch, start offset) pairs from tuples or EpochEntry-like objects, checked like Kafka's
    RemoteLogSegmentMetadata: not empty, epochs ascending."""
    pairs: list[tuple[int, int]] = []
    for entry in entries:
        if isinstance(entry, tuple | list):
            epoch, start = entry
        else:
            epoch, start = entry.epoch, entry.start_offset
        pairs.append((int(epoch), int(start)))
    if not pairs:
        raise ValueError(f"segment {segment_id}: segment_leader_epochs must not be empty")
    for (epoch, start), (next_epoch, next_start) in pairwise(pairs):
        if next_epoch <= epoch or next_start < start:
            raise ValueError(
                f"segment {segment_id}: segment_leader_epochs not ascending at epoch {next_epoch}"
            )
    return pairs


def _check_new_segment(
    segment_id: str,
    epochs: list[tuple[int, int]],
    leader_epoch: int | None,
    start_offset: int,
    end_offset: int,
    size: int,
) -> None:
    """What RemoteLogSegmentMetadata checks: the leader epoch is the last of the segment's
    epochs, the offsets are ordered and the size is not negative."""
    last_epoch = epochs[-1][0]
    if leader_epoch is not None and leader_epoch != last_epoch:
        raise ValueError(
            f"segment {segment_id}: leader_epoch {leader_epoch} is not the last of "
            f"segment_leader_epochs ({last_epoch})"
        )
    if not 0 <= start_offset <= end_offset:
        raise ValueError(
            f"segment {segment_id}: need 0 <= start_offset ({start_offset}) <= "
            f"end_offset ({end_offset})"
        )
    if size < 0:
        raise ValueError(f"segment {segment_id}: negative size {size}")


def _object_rows(
    segment_id: str, objects: Iterable[tuple[str, str, int, str]]
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for kind, key, size, sha256 in objects:
        try:
            kind_name = SegmentObjectKind(kind).value
        except ValueError:
            raise ValueError(f"segment {segment_id}: unknown object kind {kind!r}") from None
        if any(row["kind"] == kind_name for row in rows):
            raise ValueError(f"segment {segment_id}: object kind {kind_name} given twice")
        rows.append(
            {
                "segment_id": segment_id,
                "kind": kind_name,
                "key": key,
                "size": size,
                "sha256": sha256,
            }
        )
    return rows


def _store_finished_copy(
    connection: Connection, segment: RemoteLogSegment, object_rows: list[dict[str, Any]]
) -> None:
    if object_rows:
        connection.execute(insert(RemoteSegmentObject), object_rows)
    connection.execute(
        update(Partition)
        .where(
            *partition_key(Partition, segment.topic_id, segment.partition),
            col(Partition.highest_remote_offset) < segment.end_offset,
        )
        .values(highest_remote_offset=segment.end_offset)
    )


def _same_segment_or_raise(existing: RemoteLogSegment, row: dict[str, Any]) -> RemoteLogSegment:
    """A repeated add is a no-op only for the same segment still in COPY_SEGMENT_STARTED."""
    identity = ("topic_id", "partition", "start_offset", "end_offset")
    if any(getattr(existing, name) != row[name] for name in identity):
        raise ValueError(
            f"segment {existing.segment_id} already exists for "
            f"{existing.topic_id}-{existing.partition} "
            f"[{existing.start_offset}, {existing.end_offset}]"
        )
    started = RemoteLogSegmentState.COPY_SEGMENT_STARTED
    if existing.segment_state is not started:
        raise InvalidStateTransition("segment", existing.segment_id, existing.state, started)
    return existing
