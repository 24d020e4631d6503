"""Checks of the state a rerun after a kill must end in, shared by the crash tests."""

from __future__ import annotations

from collections.abc import Sequence

from tests.support.tiered import Tiered
from tierflow.metadata.models import RemoteLogSegment
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.metadata.states import is_valid_segment_transition


def assert_histories_and_bucket_clean(
    t: Tiered, rows: Sequence[RemoteLogSegment], live: Sequence[RemoteLogSegment]
) -> None:
    """Every segment's history is one of Kafka's transitions after another, and the bucket
    holds exactly the objects of the ``live`` segments."""
    for row in rows:
        previous = None
        for event in t.store.events(segment_id=row.segment_id):
            assert is_valid_segment_transition(
                None if previous is None else S(previous), S(event.to_state)
            )
            previous = event.to_state
    keys = {o.key for r in live for o in t.store.segment_objects(r.segment_id)}
    on_disk = {p.relative_to(t.bucket()).as_posix() for p in t.bucket().rglob("*") if p.is_file()}
    assert on_disk == keys, "every object belongs to a finished segment"
