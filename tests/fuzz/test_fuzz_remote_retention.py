"""Remote retention's planner against an oracle written apart from it, from Kafka's rules.

``tests/support/retention_oracle.py`` restates Kafka's expiration task; these properties feed
both the same partition: a log cut into segments over several leader epochs, a prefix of it
tiered (some deletes left unfinished, a copy in flight or abandoned), the log start moved by a
DeleteRecords or not, the broker's epoch cache truncated for it or not, retention.ms and
retention.bytes together, and, for the first property, uploads of diverged leaders beside.

1. One run plans exactly what the oracle deletes, and moves the log start where it does.
2. A run killed after it moved the log start, at any point of its deletes, and rerun (killed
   again, perhaps) ends with what the oracle deletes in one uninterrupted run. The rerun sees
   the state a kill leaves: the log start moved, some segments deleted, one DELETE_STARTED.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import accumulate

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fuzz.support import counted
from tests.support.retention_oracle import (
    DELETING,
    FINISHED,
    STARTED,
    Outcome,
    Partition,
    Seg,
    expire,
)
from tierflow.kafka.leader_epoch import EpochEntry
from tierflow.lifecycle.retention.remote_plan import (
    DEFAULT_COPY_GRACE_MS,
    LogView,
    RemoteRetentionPlan,
    RetentionReason,
    plan_remote_retention,
)

pytestmark = pytest.mark.slow

NOW = 2_000_000_000_000
STEP_MS = 60_000  # between two segments' max timestamps
# Pure and quick: thousands of partitions even in make test (make fuzz runs its 10,000).
THOUSANDS = settings(max_examples=max(2_000, settings.default.max_examples))


@dataclass(frozen=True)
class Row:
    """A store row as the planner reads it, made from the oracle's segment."""

    segment_id: str
    start_offset: int
    end_offset: int
    max_timestamp_ms: int
    segment_size_bytes: int
    state: str
    created_ms: int
    leader_epochs: list[tuple[int, int]]


@dataclass(frozen=True)
class TopicRow:
    retention_ms: int
    retention_bytes: int
    name: str = "t"
    topic_id: str = "id"
    cleanup_policy: str = "delete"


def planned(segs: list[Seg], p: Partition) -> RemoteRetentionPlan:
    rows = [
        Row(
            s.id,
            s.start,
            s.end,
            s.max_ts,
            s.size,
            s.state,
            NOW if s.id in p.being_copied else NOW - 2 * DEFAULT_COPY_GRACE_MS,
            list(s.epochs),
        )
        for s in sorted(segs, key=lambda s: s.start)
    ]
    log = LogView(
        p.log_start, p.log_end, p.only_local_bytes, [EpochEntry(e, o) for e, o in p.cache]
    )
    topic = TopicRow(p.retention_ms, p.retention_bytes)
    return plan_remote_retention(topic, 0, rows, log, now_ms=p.now_ms, copy_lease_live=False)


def outcome_of(plan: RemoteRetentionPlan, p: Partition) -> Outcome:
    start = plan.new_log_start_offset
    return Outcome(frozenset(plan.segment_ids), p.log_start if start is None else start)


# ----------------------------------------------------------------------------------------------
# Partitions


@st.composite
def caches(draw: st.DrawFn, log_end: int) -> list[tuple[int, int]]:
    """A leader-epoch cache: epochs ascending with gaps, starts ascending, some epochs empty
    (the next one starts at the same offset)."""
    changes = sorted(draw(st.lists(st.integers(0, log_end - 1), max_size=4)))
    epoch = draw(st.integers(0, 3))
    cache = [(epoch, 0)]
    for start in changes:
        epoch += draw(st.integers(1, 3))
        cache.append((epoch, start))
    return cache


def epochs_of(cache: list[tuple[int, int]], start: int, end: int) -> tuple[tuple[int, int], ...]:
    """The cache's entries for offsets start..end, the first moved to start: what Kafka's copy
    records as a segment's leader epochs."""
    at_start = [e for e, o in cache if o <= start][-1]
    inside = [(e, o) for e, o in cache if start < o <= end]
    return ((at_start, start), *inside)


@st.composite
def partitions(draw: st.DrawFn, *, diverged: bool) -> tuple[list[Seg], Partition]:
    count = draw(st.integers(2, 24))
    lengths = draw(st.lists(st.integers(1, 40), min_size=count, max_size=count))
    bases = [0, *accumulate(lengths)]
    log_end = bases[-1]
    cache = draw(caches(log_end))
    sizes = draw(st.lists(st.integers(1, 400), min_size=count, max_size=count))
    tiered = draw(st.integers(1, count - 1))  # the active segment is never tiered
    segs = [
        Seg(
            f"s{i}",
            bases[i],
            bases[i + 1] - 1,
            epochs_of(cache, bases[i], bases[i + 1] - 1),
            sizes[i],
            NOW - (count - i) * STEP_MS + draw(st.integers(-STEP_MS, STEP_MS)),
            draw(st.sampled_from([FINISHED] * 9 + [DELETING])),
        )
        for i in range(tiered)
    ]
    segs += draw(_copies(segs, bases, cache, tiered, count))
    if diverged:
        others = draw(st.lists(_diverged(log_end), max_size=3))
        segs += [replace(seg, id=f"diverged{i}") for i, seg in enumerate(others)]
    return segs, draw(_partition(segs, cache, log_end, sum(sizes[tiered:])))


@st.composite
def _copies(
    draw: st.DrawFn, segs: list[Seg], bases: list[int], cache: list, tiered: int, count: int
) -> list[Seg]:
    """A copy in flight (live or abandoned) of the next segment, and abandoned attempts at
    segments that were copied again afterwards."""
    out = []
    if tiered < count - 1 and draw(st.booleans()):
        start, end = bases[tiered], bases[tiered + 1] - 1
        out.append(Seg("copying", start, end, epochs_of(cache, start, end), 50, NOW, STARTED))
    for seg in draw(st.lists(st.sampled_from(segs), max_size=2, unique_by=lambda s: s.id)):
        out.append(replace(seg, id=f"{seg.id}-abandoned", state=STARTED))
    return out


@st.composite
def _diverged(draw: st.DrawFn, log_end: int) -> Seg:
    """An upload of a diverged leader: any range, epochs that may or may not be the cache's."""
    start = draw(st.integers(0, log_end - 1))
    end = draw(st.integers(start, log_end))
    firsts = sorted(set(draw(st.lists(st.integers(0, 12), min_size=1, max_size=3))))
    offsets = sorted(draw(st.lists(st.integers(start, end), min_size=len(firsts) - 1)))
    epochs = tuple(zip(firsts, [start, *offsets[: len(firsts) - 1]], strict=True))
    size = draw(st.integers(1, 400))
    return Seg("diverged", start, end, epochs, size, NOW - draw(st.integers(0, 10**8)))


@st.composite
def _partition(
    draw: st.DrawFn, segs: list[Seg], cache: list, log_end: int, local: int
) -> Partition:
    """The log start (moved by a DeleteRecords, or not), the cache the broker truncated for it
    (or not: tierflow moved it, in its store), the limits and what is being copied."""
    log_start = draw(st.sampled_from([0, draw(st.integers(0, log_end))]))
    truncated = draw(st.booleans())
    remote = sum(s.size for s in segs)
    being_copied = {"copying"} if draw(st.booleans()) else set()
    return Partition(
        log_start=log_start,
        log_end=log_end,
        cache=tuple(_truncate(cache, log_start) if truncated else cache),
        only_local_bytes=local,
        retention_ms=draw(st.sampled_from([-1, draw(st.integers(0, 30 * STEP_MS))])),
        retention_bytes=draw(st.sampled_from([-1, draw(st.integers(0, remote + local))])),
        now_ms=NOW,
        being_copied=frozenset(being_copied),
    )


def _truncate(cache: list[tuple[int, int]], start: int) -> list[tuple[int, int]]:
    below = [(e, o) for e, o in cache if o <= start]
    return [(below[-1][0], start), *((e, o) for e, o in cache if o > start)]


# ----------------------------------------------------------------------------------------------
# Properties


@THOUSANDS
@given(partitions(diverged=True))
@counted
def test_one_run_deletes_what_kafkas_rules_delete(case: tuple[list[Seg], Partition]) -> None:
    segs, partition = case
    plan = planned(segs, partition)
    assert outcome_of(plan, partition) == expire(segs, partition)
    assert len(plan.segment_ids) == len(set(plan.segment_ids))  # each segment goes once


@THOUSANDS
@given(partitions(diverged=False), st.lists(st.floats(0, 1), min_size=1, max_size=2))
@counted
def test_killed_runs_end_as_kafkas_rules_in_one(
    case: tuple[list[Seg], Partition], kills: list[float]
) -> None:
    segs, partition = case
    expected = expire(segs, partition)
    deleted: set[str] = set()
    for where in [*kills, None]:
        plan = planned(segs, partition)
        done, half = _run(plan, where)
        deleted |= done
        segs = [replace(s, state=DELETING) if s.id == half else s for s in segs if s.id not in done]
        start = plan.new_log_start_offset
        partition = replace(partition, log_start=start or partition.log_start)
    assert deleted == set(expected.deleted) and partition.log_start == expected.log_start


def _run(plan: RemoteRetentionPlan, where: float | None) -> tuple[set[str], str | None]:
    """What a run carried out before a kill at ``where`` (0-1 of its deletes; None: no kill),
    in execution order (retries first); and the segment it left DELETE_SEGMENT_STARTED."""
    order = sorted(plan.deletions, key=lambda d: d.reason != RetentionReason.RETRY_DELETE)
    ids = [d.segment_id for d in order]
    if where is None:
        return set(ids), None
    cut = int(where * len(ids))
    return set(ids[:cut]), ids[cut] if cut < len(ids) else None
