"""The end state of a complete, clean copy of orders, shared by the copy crash tests."""

from __future__ import annotations

from tests.support.tiered import Tiered, eligible
from tierflow.lifecycle.copy.verify import verify_partition
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.metadata.states import is_valid_segment_transition


def assert_complete_and_clean(t: Tiered) -> None:
    topic = t.store.topic("orders")
    expected_keys: set[str] = set()
    for log_ in t.logs():
        if log_.topic != "orders":
            continue
        rows = t.store.segments(topic.topic_id, log_.partition)
        live = [r for r in rows if r.state != S.DELETE_SEGMENT_FINISHED]
        # Exactly one FINISHED segment per eligible local segment, nothing half-done.
        assert [(r.start_offset, r.end_offset, r.state) for r in live] == [
            (start, end, S.COPY_SEGMENT_FINISHED) for start, end in eligible(log_)
        ]
        checks = verify_partition(log_, topic, t.store, t.rsm)
        assert all(c.identical for c in checks) and len(checks) == len(live)
        for row in live:
            expected_keys |= {o.key for o in t.store.segment_objects(row.segment_id)}
        for row in rows:
            events = t.store.events(segment_id=row.segment_id)
            previous = None
            for event in events:
                assert event.from_state == previous
                assert is_valid_segment_transition(
                    None if previous is None else S(previous), S(event.to_state)
                )
                previous = event.to_state
            assert previous == row.state
    # Every file in the bucket directory, temporary ones included, belongs to a FINISHED segment.
    on_disk = {p.relative_to(t.bucket()).as_posix() for p in t.bucket().rglob("*") if p.is_file()}
    assert on_disk == expected_keys
