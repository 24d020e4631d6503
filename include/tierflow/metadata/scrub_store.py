"""The scrubber's side of the store: which finished segments to re-read next, and what each
check found.

The queue is a rolling pass over every COPY_SEGMENT_FINISHED segment: those never checked
first, newest first (a fresh copy is the likeliest to meet a misfiring lifecycle rule), then
the one checked longest ago. A check writes one row per segment, and an event only when its
verdict changes (a finding opened, or closed by a later check that passed), so the history
says when an object went bad without one row per pass.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, case, delete, func, insert
from sqlmodel import col, select

from tierflow.metadata.events import Event, EventEntity, Subject, append_event
from tierflow.metadata.models import RemoteLogSegment, RemoteSegmentScrub
from tierflow.metadata.states import RemoteLogSegmentState
from tierflow.metadata.store_base import StoreBase, partition_key

FINDING_OPENED = "SCRUB_FINDING"
FINDING_CLOSED = "SCRUB_PASSED"
REPAIRED = "SCRUB_REPAIRED"


@dataclass(frozen=True)
class Finding:
    """What is wrong, and with which object (its key)."""

    key: str
    what: str


@dataclass(frozen=True)
class ScrubVerdict:
    """One segment's check, after reading ``checked_bytes``: no finding when it passed."""

    segment: RemoteLogSegment
    checked_ms: int
    checked_bytes: int
    finding: Finding | None


@dataclass(frozen=True)
class OpenFinding:
    """An open finding with the segment it is about: where the damage is, not only its key."""

    segment: RemoteLogSegment
    scrub: RemoteSegmentScrub


class ScrubStore(StoreBase):
    def scrub_queue(self, limit: int) -> list[RemoteLogSegment]:
        """Up to ``limit`` finished segments in the order the scrubber takes them."""
        scrub = RemoteSegmentScrub
        never = case((col(scrub.checked_ms).is_(None), 0), else_=1)
        query = (
            select(RemoteLogSegment)
            .outerjoin(scrub, col(scrub.segment_id) == col(RemoteLogSegment.segment_id))
            .where(col(RemoteLogSegment.state) == RemoteLogSegmentState.COPY_SEGMENT_FINISHED.value)
            .order_by(
                never,
                col(scrub.checked_ms),
                col(RemoteLogSegment.created_ms).desc(),
                col(RemoteLogSegment.segment_id),
            )
            .limit(limit)
        )
        return self._all(query)

    def scrub_of(self, segment_id: str) -> RemoteSegmentScrub | None:
        return self._get(RemoteSegmentScrub, segment_id)

    def open_findings(self) -> list[RemoteSegmentScrub]:
        """The segments whose last check found something wrong, worst first: oldest finding.
        A segment deleted since (repaired, or expired by retention) has none: nothing reads it."""
        return [found.scrub for found in self.open_findings_of()]

    def open_findings_of(
        self,
        topic_ids: Collection[str] | None = None,
        *,
        partition: int | None = None,
        limit: int | None = None,
    ) -> list[OpenFinding]:
        """``open_findings`` of these topics (None: every topic; of one partition number, if
        given), each with its segment: where the damage is, read in the same query."""
        if topic_ids is not None and not topic_ids:
            return []
        query = (
            _open_findings(RemoteSegmentScrub, RemoteLogSegment)
            .where(*_of_topics(topic_ids, partition))
            .order_by(col(RemoteSegmentScrub.checked_ms), col(RemoteSegmentScrub.segment_id))
            .limit(limit)
        )
        with self._session() as session:
            rows = session.exec(query).all()
        return [OpenFinding(segment, scrub) for scrub, segment in rows]

    def count_open_findings(
        self, topic_ids: Collection[str], *, partition: int | None = None
    ) -> dict[str, int]:
        """Topic id -> how many open findings, in one GROUP BY; topics without any are absent."""
        if not topic_ids:
            return {}
        topic_id = col(RemoteLogSegment.topic_id)
        query = (
            _open_findings(topic_id, func.count())
            .where(*_of_topics(topic_ids, partition))
            .group_by(topic_id)
        )
        with self._session() as session:
            return {str(topic): int(count) for topic, count in session.exec(query).all()}

    def flagged_segment_ids(self, topic_id: str, partition: int) -> set[str]:
        """The partition's segments with an open finding: not a copy local retention may trust."""
        query = _open_findings(RemoteSegmentScrub.segment_id).where(
            *partition_key(RemoteLogSegment, topic_id, partition)
        )
        return set(self._all(query))

    def record_repair(
        self, segment: RemoteLogSegment, replacement: str, *, actor: str, now_ms: int
    ) -> None:
        """History: the damaged segment was copied again as ``replacement`` (its delete states
        follow as segment events)."""
        subject = Subject(
            EventEntity.SCRUB, segment.topic_id, segment.partition, segment.segment_id
        )
        event = Event(subject, REPAIRED, actor, now_ms, details={"replacement": replacement})
        with self._write() as connection:
            append_event(connection, event)

    def record_scrub(self, verdict: ScrubVerdict, *, actor: str) -> None:
        """The check's row, and an event when the verdict differs from the last one."""
        segment = verdict.segment
        with self._write() as connection:
            # The row it replaces, read and removed in the same transaction as the new one.
            before = connection.execute(
                delete(RemoteSegmentScrub)
                .where(col(RemoteSegmentScrub.segment_id) == segment.segment_id)
                .returning(RemoteSegmentScrub.finding_key, RemoteSegmentScrub.finding)
            ).first()
            connection.execute(
                insert(RemoteSegmentScrub).values(
                    segment_id=segment.segment_id,
                    checked_ms=verdict.checked_ms,
                    checked_bytes=verdict.checked_bytes,
                    finding=verdict.finding.what if verdict.finding else None,
                    finding_key=verdict.finding.key if verdict.finding else None,
                )
            )
            was = Finding(*before) if before and before.finding is not None else None
            if was != verdict.finding:
                append_event(connection, _verdict_event(verdict, actor))


def _open_findings(*columns: Any) -> Any:
    """SELECT ``columns`` over the open findings joined to their segments: a finding is open
    while the check found something and its segment is not deleted."""
    return (
        select(*columns)
        .select_from(RemoteSegmentScrub)
        .join(
            RemoteLogSegment,
            col(RemoteLogSegment.segment_id) == col(RemoteSegmentScrub.segment_id),
        )
        .where(
            col(RemoteSegmentScrub.finding).is_not(None),
            col(RemoteLogSegment.state) != RemoteLogSegmentState.DELETE_SEGMENT_FINISHED.value,
        )
    )


def _of_topics(
    topic_ids: Collection[str] | None, partition: int | None
) -> list[ColumnElement[bool]]:
    """Segments of these topics (None: any), and of one partition number when it is given."""
    found = []
    if topic_ids is not None:
        found.append(col(RemoteLogSegment.topic_id).in_(list(topic_ids)))
    if partition is not None:
        found.append(col(RemoteLogSegment.partition) == partition)
    return found


def _verdict_event(verdict: ScrubVerdict, actor: str) -> Event:
    segment = verdict.segment
    subject = Subject(EventEntity.SCRUB, segment.topic_id, segment.partition, segment.segment_id)
    if verdict.finding is None:
        return Event(subject, FINDING_CLOSED, actor, verdict.checked_ms)
    details = {"object": verdict.finding.key, "finding": verdict.finding.what}
    return Event(subject, FINDING_OPENED, actor, verdict.checked_ms, details=details)
