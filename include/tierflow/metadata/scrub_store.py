"""The scrubber's side of the store: which finished segments to re-read next, and what each
check found.

The queue is a rolling pass over every COPY_SEGMENT_FINISHED segment: those never checked
first, newest first (a fresh copy is the likeliest to meet a misfiring lifecycle rule), then
the one checked longest ago. A check writes one row per segment, and an event only when its
verdict changes (a finding opened, or closed by a later check that passed), so the history
says when an object went bad without one row per pass.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import case, delete, insert
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
        query = (
            select(RemoteSegmentScrub)
            .join(
                RemoteLogSegment,
                col(RemoteLogSegment.segment_id) == col(RemoteSegmentScrub.segment_id),
            )
            .where(
                col(RemoteSegmentScrub.finding).is_not(None),
                col(RemoteLogSegment.state) != RemoteLogSegmentState.DELETE_SEGMENT_FINISHED.value,
            )
            .order_by(col(RemoteSegmentScrub.checked_ms), col(RemoteSegmentScrub.segment_id))
        )
        return self._all(query)

    def flagged_segment_ids(self, topic_id: str, partition: int) -> set[str]:
        """The partition's segments with an open finding: not a copy local retention may trust."""
        query = (
            select(RemoteSegmentScrub.segment_id)
            .join(
                RemoteLogSegment,
                col(RemoteLogSegment.segment_id) == col(RemoteSegmentScrub.segment_id),
            )
            .where(
                col(RemoteSegmentScrub.finding).is_not(None),
                *partition_key(RemoteLogSegment, topic_id, partition),
            )
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


def _verdict_event(verdict: ScrubVerdict, actor: str) -> Event:
    segment = verdict.segment
    subject = Subject(EventEntity.SCRUB, segment.topic_id, segment.partition, segment.segment_id)
    if verdict.finding is None:
        return Event(subject, FINDING_CLOSED, actor, verdict.checked_ms)
    details = {"object": verdict.finding.key, "finding": verdict.finding.what}
    return Event(subject, FINDING_OPENED, actor, verdict.checked_ms, details=details)
