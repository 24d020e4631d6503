"""KIP-950 disablement, ported from DisableRemoteLogOnTopicTest / EnableRemoteLogOnTopicTest.

The Kafka tests drive configs on a live cluster and consume; here the same steps run against
the store, a real bucket and fetch_remote, with the copy itself as the offloading broker.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.disablement.support import bucket_files, clock, copy, copy_first, live, live_keys
from tests.retention.support import configure, copy_all, spans
from tests.support.tiered import NOW_MS, Tiered, build_tiered, eligible
from tierflow.lifecycle.copy.prepare import CopyOwner, prepare_copy
from tierflow.lifecycle.copy.rewrite import rewrite_segment
from tierflow.lifecycle.copy.steps import copy_partition
from tierflow.lifecycle.disablement import complete_disable, enable, request_disable
from tierflow.lifecycle.retention.remote import execute_remote_retention, plan_partition_retention
from tierflow.metadata.errors import InvalidConfigError, TieredStorageDisablementInProgressError
from tierflow.metadata.states import TieredState
from tierflow.read.fetch import FetchRequest, OffsetOutOfRangeError, fetch_remote
from tierflow.read.index_cache import RemoteIndexCache

ACTOR = "test:disable"
DAY_MS = 86_400_000


def disable(t: Tiered, policy: str, **kwargs: object):
    request_disable(t.store, "orders", policy=policy, actor=ACTOR, now_ms=NOW_MS)  # type: ignore[arg-type]
    return complete_disable(t.store, t.rsm, "orders", actor=ACTOR, clock=clock, **kwargs)


def test_retain_keeps_remote_readable_and_stops_copying(tiered: Tiered) -> None:
    t = tiered
    before = {p: spans(live(t, "orders", p)) for p in (0, 1)}
    request = request_disable(t.store, "orders", policy="retain", actor=ACTOR, now_ms=NOW_MS)
    assert (request.state, request.tiered_epoch, request.policy) == (
        TieredState.DISABLING,
        1,
        "retain",
    )
    report = complete_disable(t.store, t.rsm, "orders", actor=ACTOR, clock=clock)

    assert (report.state, report.finished, report.deleted_segments) == (
        TieredState.DISABLED,
        True,
        [],
    )
    topic = t.store.topic("orders")
    assert (topic.state, topic.remote_storage_enable) == (TieredState.DISABLED, False)
    fetched = fetch_remote(t.store, t.rsm, FetchRequest("orders", 0, offset=0))
    assert fetched.batches and fetched.first_offset == 0
    for log_ in t.logs():
        if log_.topic == "orders":
            assert copy_partition(log_, t.store, t.rsm, owner="copy", clock=clock).skipped
            assert spans(live(t, "orders", log_.partition)) == before[log_.partition]
    assert bucket_files(t) == live_keys(t)


def test_retained_remote_data_still_expires_by_retention(tiered: Tiered) -> None:
    t = tiered
    disable(t, "retain")
    topic = t.store.topic("orders")
    partition = t.store.partition(topic.topic_id, 0)
    assert partition is not None and live(t, "orders", 0)
    plan = plan_partition_retention(t.store, topic, partition, now_ms=NOW_MS + 30 * DAY_MS)
    execute_remote_retention(plan, t.store, t.rsm, actor=ACTOR, clock=clock)
    assert live(t, "orders", 0) == []
    assert bucket_files(t) == live_keys(t)


def test_delete_empties_remote_storage_and_keeps_local_data(tmp_path: Path) -> None:
    t = build_tiered(tmp_path)
    copy_all(t)
    topic = t.store.topic("orders")
    log0 = t.log("orders", 0)
    local_before = {(p.partition, s.base_offset) for p in t.logs() for s in p.segments()}
    # Local retention had moved the local log start past the first segment.
    local_start = log0.segments()[1].base_offset
    t.store.advance_local_log_start_offset(
        topic.topic_id, 0, local_start, actor=ACTOR, now_ms=NOW_MS
    )
    cache = RemoteIndexCache(tmp_path / "index-cache")
    first = live(t, "orders", 0)[0]
    fetch_remote(
        t.store, t.rsm, FetchRequest("orders", 0, offset=first.start_offset), index_cache=cache
    )
    fetch_remote(
        t.store, t.rsm, FetchRequest("orders", 0, offset=first.end_offset), index_cache=cache
    )
    assert first.segment_id in cache

    report = disable(t, "delete", index_caches=(cache,))

    assert report.state is TieredState.DISABLED and report.log_start_offsets[0] == local_start
    assert all(live(t, "orders", p) == [] for p in (0, 1))
    assert not any("orders" in key for key in bucket_files(t))
    assert bucket_files(t) == live_keys(t)  # payments untouched
    assert first.segment_id not in cache
    partition = t.store.partition(topic.topic_id, 0)
    assert partition is not None
    assert (partition.log_start_offset, partition.highest_remote_offset) == (local_start, -1)
    with pytest.raises(OffsetOutOfRangeError) as raised:
        fetch_remote(t.store, t.rsm, FetchRequest("orders", 0, offset=0))
    message = str(raised.value)
    assert "offset 0 is out of range" in message
    assert f"log start offset {local_start}" in message
    assert {(p.partition, s.base_offset) for p in t.logs() for s in p.segments()} == local_before
    events = [(e.from_state, e.to_state) for e in t.store.events(entity="topic")]
    assert events[-2:] == [("ENABLED", "DISABLING"), ("DISABLING", "DISABLED")]


def test_complete_disable_is_idempotent(tiered: Tiered) -> None:
    t = tiered
    disable(t, "delete")
    events = len(t.store.events())
    again = complete_disable(t.store, t.rsm, "orders", actor=ACTOR, clock=clock)
    assert (again.state, again.finished, again.deleted_segments) == (
        TieredState.DISABLED,
        False,
        [],
    )
    assert len(t.store.events()) == events


def test_second_request_while_disabling_is_rejected(tiered: Tiered) -> None:
    t = tiered
    request_disable(t.store, "orders", policy="delete", actor=ACTOR, now_ms=NOW_MS)
    epoch = t.store.topic("orders").tiered_epoch
    for policy in ("delete", "retain"):
        with pytest.raises(
            TieredStorageDisablementInProgressError, match="TIERED_STORAGE_DISABLEMENT_IN_PROGRESS"
        ):
            request_disable(t.store, "orders", policy=policy, actor=ACTOR, now_ms=NOW_MS)  # type: ignore[arg-type]
    with pytest.raises(TieredStorageDisablementInProgressError):
        enable(t.store, "orders", actor=ACTOR, now_ms=NOW_MS)
    topic = t.store.topic("orders")
    assert (topic.state, topic.tiered_epoch, topic.remote_log_disable_policy) == (
        TieredState.DISABLING,
        epoch,
        "delete",
    )
    complete_disable(t.store, t.rsm, "orders", actor=ACTOR, clock=clock)
    with pytest.raises(InvalidConfigError, match="already DISABLED"):
        request_disable(t.store, "orders", policy="delete", actor=ACTOR, now_ms=NOW_MS)


@pytest.mark.parametrize(
    ("policy", "configs", "match"),
    [
        pytest.param(
            "archive",
            {},
            "remote.log.disable.policy='archive' for topic orders: must be one of",
            id="unknown-policy-archive",
        ),
        pytest.param("", {}, "must be one of delete, retain", id="empty-policy"),
        pytest.param(
            "retain",
            {"local_retention_ms": 3_600_000},
            "policy retain: local.retention.ms=3600000 must be -2 or equal to retention.ms",
            id="retain-with-local-ms-below-total",
        ),
        pytest.param(
            "retain",
            {"retention_bytes": 10_000_000, "local_retention_bytes": 1_000_000},
            "policy retain: local.retention.bytes=1000000 must be -2 or equal",
            id="retain-with-local-bytes-below-total",
        ),
    ],
)
def test_invalid_disable_is_rejected_and_changes_nothing(
    tiered: Tiered, policy: str, configs: dict, match: str
) -> None:
    t = tiered
    if configs:
        configure(t, "orders", **configs)
    before = t.store.topic("orders")
    events = len(t.store.events())
    with pytest.raises(InvalidConfigError, match=match):
        request_disable(t.store, "orders", policy=policy, actor=ACTOR, now_ms=NOW_MS + 1)  # type: ignore[arg-type]
    assert t.store.topic("orders") == before
    assert len(t.store.events()) == events


def test_delete_is_allowed_whatever_local_retention(tiered: Tiered) -> None:
    t = tiered
    configure(t, "orders", local_retention_ms=3_600_000)
    assert disable(t, "delete").state is TieredState.DISABLED


def test_complete_disable_refuses_an_enabled_topic(tiered: Tiered) -> None:
    with pytest.raises(Exception, match="ENABLED -> DISABLED"):
        complete_disable(tiered.store, tiered.rsm, "orders", actor=ACTOR, clock=clock)


def test_enable_remote_log_on_existing_topic(tmp_path: Path) -> None:
    """EnableRemoteLogOnTopicTest: created with tiering off, data present, then enabled."""
    t = build_tiered(tmp_path, enable=False)
    orders = [log_ for log_ in t.logs() if log_.topic == "orders"]
    for log_ in orders:
        report = copy_partition(log_, t.store, t.rsm, owner="copy", clock=clock)
        assert report.skipped == "remote.storage.enable=false"
    topic = enable(t.store, "orders", actor=ACTOR, now_ms=NOW_MS)
    assert (topic.state, topic.tiered_epoch) == (TieredState.ENABLED, 1)
    assert enable(t.store, "orders", actor=ACTOR, now_ms=NOW_MS).tiered_epoch == 1  # no-op
    for log_ in orders:
        assert copy(t, log_) == eligible(log_) != []
        assert {r.tiered_epoch for r in live(t, "orders", log_.partition)} == {1}
    fetched = fetch_remote(t.store, t.rsm, FetchRequest("orders", 0, offset=0))
    assert fetched.batches and fetched.first_offset == 0


def test_reenable_after_retain_resumes_without_duplicates(tmp_path: Path) -> None:
    t = build_tiered(tmp_path)
    log0 = t.log("orders", 0)
    wanted = eligible(log0)
    assert len(wanted) >= 2
    copy_first(t, log0, 1)
    assert spans(live(t, "orders", 0)) == wanted[:1]

    disable(t, "retain")
    topic = enable(t.store, "orders", actor=ACTOR, now_ms=NOW_MS)
    assert (topic.state, topic.tiered_epoch) == (TieredState.ENABLED, 2)

    assert copy(t, log0) == wanted[1:]  # from highest remote offset + 1
    rows = live(t, "orders", 0)
    assert spans(rows) == wanted
    assert [r.tiered_epoch for r in rows] == [0] + [2] * (len(wanted) - 1)
    assert bucket_files(t) == live_keys(t)


def test_reenable_after_delete_resumes_from_the_log_start(tmp_path: Path) -> None:
    t = build_tiered(tmp_path)
    copy_all(t)
    topic = t.store.topic("orders")
    log0 = t.log("orders", 0)
    local_start = log0.segments()[1].base_offset
    t.store.advance_local_log_start_offset(
        topic.topic_id, 0, local_start, actor=ACTOR, now_ms=NOW_MS
    )
    disable(t, "delete")
    topic = enable(t.store, "orders", actor=ACTOR, now_ms=NOW_MS)
    assert topic.tiered_epoch == 2

    copied = copy(t, log0)
    assert copied == [span for span in eligible(log0) if span[0] >= local_start] != []
    assert {r.tiered_epoch for r in live(t, "orders", 0)} == {2}
    log1 = t.log("orders", 1)
    assert copy(t, log1) == eligible(log1)  # nothing of it was remote any more
    fetched = fetch_remote(t.store, t.rsm, FetchRequest("orders", 0, offset=local_start))
    assert fetched.first_offset == local_start
    assert bucket_files(t) == live_keys(t)


def test_retain_cleans_up_an_abandoned_copy(tmp_path: Path) -> None:
    """A copy killed after COPY_SEGMENT_STARTED would never be cleaned up once disabled."""
    t = build_tiered(tmp_path)
    log0 = t.log("orders", 0)
    plan = prepare_copy(
        log0, t.store, rsm=t.rsm, owner=CopyOwner("copy"), clock=clock, max_segments=1
    )
    rewrite_segment(plan.jobs[0], t.rsm)  # uploaded, never finalized; lease still held
    t.store.release_lease(t.store.topic("orders").topic_id, 0, "copy")
    report = disable(t, "retain")
    assert report.deleted_segments == [plan.jobs[0].segment_id]
    assert live(t, "orders", 0) == []
    assert bucket_files(t) == live_keys(t)


def test_retained_topic_can_then_be_disabled_with_delete(tiered: Tiered) -> None:
    """Kafka's read-only state (copy disabled) may still turn remote storage off with delete."""
    t = tiered
    disable(t, "retain")
    retained_epoch = t.store.topic("orders").tiered_epoch
    assert live(t, "orders", 0)
    report = disable(t, "delete")
    topic = t.store.topic("orders")
    assert (topic.state, topic.remote_log_disable_policy, topic.tiered_epoch) == (
        TieredState.DISABLED,
        "delete",
        retained_epoch + 1,
    )
    assert report.deleted_segments and live(t, "orders", 0) == live(t, "orders", 1) == []
    assert bucket_files(t) == live_keys(t)
    with pytest.raises(InvalidConfigError, match="already DISABLED"):
        request_disable(t.store, "orders", policy="retain", actor=ACTOR, now_ms=NOW_MS)
