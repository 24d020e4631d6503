"""begin_tiered_disable and reset_highest_remote_offset: KIP-950's conditional writes."""

from __future__ import annotations

import json

import pytest

from tests.metadata.metadata_support import NOW, PARTITION, TOPIC_ID, S, add_segment, new_store
from tierflow.metadata import InvalidConfigError, SegmentTransition, TieredState
from tierflow.metadata.errors import TieredStorageDisablementInProgressError
from tierflow.metadata.tiered_disable import begin_tiered_disable


def test_begin_moves_enabled_to_disabling_once(store_url: str) -> None:
    store = new_store(store_url)
    topic = begin_tiered_disable(store, TOPIC_ID, policy="delete", actor="a", now_ms=NOW + 1)
    assert (topic.state, topic.tiered_epoch, topic.remote_storage_enable) == (
        TieredState.DISABLING,
        1,
        False,
    )
    assert topic.remote_log_disable_policy == "delete"
    event = store.events(entity="topic")[-1]
    assert (event.from_state, event.to_state) == ("ENABLED", "DISABLING")
    assert json.loads(event.details or "{}")["changed"] == {
        "remote.storage.enable": [True, False],
        "remote.log.disable.policy": ["retain", "delete"],
    }
    with pytest.raises(TieredStorageDisablementInProgressError, match="DISABLEMENT_IN_PROGRESS"):
        begin_tiered_disable(store, TOPIC_ID, policy="delete", actor="a", now_ms=NOW + 2)
    store.finish_tiered_disable(TOPIC_ID, actor="a", now_ms=NOW + 3)
    with pytest.raises(InvalidConfigError, match="already DISABLED"):
        begin_tiered_disable(store, TOPIC_ID, policy="delete", actor="a", now_ms=NOW + 4)
    assert store.topic_by_id(TOPIC_ID).tiered_epoch == 1


def test_begin_rejects_an_unknown_policy_and_changes_nothing(store_url: str) -> None:
    store = new_store(store_url)
    before, events = store.topic_by_id(TOPIC_ID), len(store.events())
    with pytest.raises(InvalidConfigError, match=r"remote\.log\.disable\.policy=keep"):
        begin_tiered_disable(store, TOPIC_ID, policy="keep", actor="a", now_ms=NOW + 1)
    assert store.topic_by_id(TOPIC_ID) == before and len(store.events()) == events


def test_reset_highest_remote_offset_only_when_disabling_and_empty(store_url: str) -> None:
    store = new_store(store_url)
    add_segment(store, "seg-1", 0, 99)
    store.transition_segment(
        SegmentTransition("seg-1", S.COPY_SEGMENT_FINISHED, objects=[]), actor="c", now_ms=NOW
    )
    assert store._require_partition(TOPIC_ID, PARTITION).highest_remote_offset == 99
    reset = lambda: store.reset_highest_remote_offset(  # noqa: E731
        TOPIC_ID, PARTITION, actor="a", now_ms=NOW
    )
    assert reset() is False  # ENABLED
    begin_tiered_disable(store, TOPIC_ID, policy="delete", actor="a", now_ms=NOW)
    assert reset() is False  # a live segment
    for state in (S.DELETE_SEGMENT_STARTED, S.DELETE_SEGMENT_FINISHED):
        store.transition_segment(SegmentTransition("seg-1", state), actor="a", now_ms=NOW)
    assert reset() is True
    assert reset() is False
    partition = store.partition(TOPIC_ID, PARTITION)
    assert partition is not None and partition.highest_remote_offset == -1
    assert store.events(entity="partition")[-1].to_state == "HIGHEST_REMOTE_OFFSET_RESET"
