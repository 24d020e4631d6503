"""Open scrub findings of the topics shown: segments whose objects the scrubber found damaged.

A finding stays open until a later check passes or the segment is deleted (repaired, or
expired), so the list is what an operator still has to act on: ``tierflow scrub --repair``
for tierflow's copies, the brokers' own for theirs. Two queries whatever the number shown.
"""

from __future__ import annotations

from collections.abc import Sequence

from tierflow.metadata.models import Topic
from tierflow.metadata.store import MetadataStore
from tierflow.operator_view.model import ScrubFindingView

MAX_SHOWN = 100  # the oldest checks; the page says how many more there are


def scrub_findings(
    store: MetadataStore,
    topics: Sequence[Topic],
    *,
    partition: int | None = None,
    limit: int = MAX_SHOWN,
) -> list[ScrubFindingView]:
    """Up to ``limit`` open findings of the topics (of one partition number, if given)."""
    names = {t.topic_id: t.name for t in topics}
    if limit <= 0:
        return []
    return [
        ScrubFindingView(
            topic=names[found.segment.topic_id],
            partition=found.segment.partition,
            segment_id=found.segment.segment_id,
            start_offset=found.segment.start_offset,
            end_offset=found.segment.end_offset,
            key=found.scrub.finding_key or "",
            finding=found.scrub.finding or "",
            checked_ms=found.scrub.checked_ms,
        )
        for found in store.open_findings_of(list(names), partition=partition, limit=limit)
    ]


def count_scrub_findings(
    store: MetadataStore, topics: Sequence[Topic], *, partition: int | None = None
) -> int:
    """How many ``scrub_findings`` would list without a limit."""
    ids = [t.topic_id for t in topics]
    return sum(store.count_open_findings(ids, partition=partition).values())
