"""update_segment_object: a rewritten object (a re-wrapped manifest) updates its row."""

from __future__ import annotations

import pytest

from tierflow.metadata import RemoteLogSegmentState, SegmentTransition
from tierflow.metadata.errors import MetadataError

from .metadata_support import NOW, add_segment, new_store


def test_update_segment_object_changes_the_row_and_logs_an_event(store_url: str) -> None:
    store = new_store(store_url)
    add_segment(store, "seg")
    objects = [
        ("log", "p/seg.log", 100, "a" * 64),
        ("indexes", "p/seg.indexes", 20, "b" * 64),
        ("rsm-manifest", "p/seg.rsm-manifest", 700, "c" * 64),
    ]
    store.transition_segment(
        SegmentTransition("seg", RemoteLogSegmentState.COPY_SEGMENT_FINISHED, objects=objects),
        actor="t",
        now_ms=NOW,
    )
    store.update_segment_object(
        "seg", "rsm-manifest", "p/seg.rsm-manifest", 701, "d" * 64, actor="rewrap", now_ms=NOW + 5
    )
    rows = {row.kind: (row.size, row.sha256) for row in store.segment_objects("seg")}
    assert rows == {
        "indexes": (20, "b" * 64),
        "log": (100, "a" * 64),
        "rsm-manifest": (701, "d" * 64),
    }
    event = store.events(segment_id="seg")[-1]
    assert (event.entity, event.actor, event.to_state) == (
        "segment_object",
        "rewrap",
        "COPY_SEGMENT_FINISHED",
    )
    assert event.details_dict["object_updated"] == "rsm-manifest"
    assert store.segment("seg").segment_state is RemoteLogSegmentState.COPY_SEGMENT_FINISHED
    # The segment state history is unchanged: replays see no extra transition.
    assert len(store.events(segment_id="seg", entity="segment")) == 2


def test_update_segment_object_needs_an_existing_row(store_url: str) -> None:
    store = new_store(store_url)
    add_segment(store, "seg")
    with pytest.raises(MetadataError, match="no rsm-manifest object"):
        store.update_segment_object("seg", "rsm-manifest", "k", 1, "e" * 64, actor="a", now_ms=NOW)
    with pytest.raises(ValueError, match="unknown object kind"):
        store.update_segment_object("seg", "manifest", "k", 1, "e" * 64, actor="a", now_ms=NOW)
