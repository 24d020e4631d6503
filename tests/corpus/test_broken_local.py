"""Broken broker files: the copy names the file and the place, and leaves no partial state.

Each case damages one partition of a freshly generated log dir and copies every partition, as
the segment_copy DAG does (one task per partition). The damaged partition must fail with the
named error; the segments before the damage are copied (Kafka copies in offset order), the
damaged one leaves no object, the lease is released, the local files are untouched, and every
healthy partition copies completely in the same run. Damage found before the copy (files,
indexes, checkpoints) leaves no row and no event; damage in the batches, which are checked as
they are uploaded, leaves the damaged segment and those after it as abandoned attempts in
Kafka's terminal state. Once the files are repaired, the next run copies everything: nothing
left behind blocks it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.corpus import damage
from tests.corpus.damage import Struck, digest_tree
from tests.corpus.state import finished_ranges, pattern, recorded_keys
from tests.support.tiered import Tiered, build_tiered, eligible
from tierflow.kafka.errors import (
    CorruptCheckpointError,
    CorruptIndexError,
    CorruptRecordError,
    MissingFileError,
    TruncatedDataError,
)
from tierflow.kafka.log_dir import PartitionLog
from tierflow.lifecycle.copy.plan import TopicIdMismatchError
from tierflow.lifecycle.copy.steps import copy_partition
from tierflow.metadata.states import RemoteLogSegmentState as S

Key = tuple[str, int]


@dataclass(frozen=True)
class CopyCase:
    name: str
    damage: Callable[[PartitionLog], Struck]
    error: type[Exception]
    message: str  # a regex; $names come from the Struck, escaped
    target: Key = ("orders", 0)
    layout: str = "plain"
    in_batches: bool = False  # found by the upload's pass over the batches


BATCH = r"$file: byte $byte: "
CASES = [
    CopyCase(
        # The offset index, checked before the copy, points into the part cut off.
        "log truncated mid-batch",
        damage.truncate_mid_batch,
        CorruptIndexError,
        r"\.index: byte \d+: entry for offset \d+ points to byte \d+, past the end of the "
        r"\d+-byte log",
    ),
    CopyCase(
        "log truncated at a batch boundary",
        damage.truncate_at_last_indexed_batch,
        CorruptIndexError,
        BATCH + r"entry for offset \d+ points to byte $position, past the end of the "
        r"$position-byte log",
    ),
    CopyCase(
        "bit flip in a batch payload",
        damage.flip_payload_bit,
        CorruptRecordError,
        BATCH + r"crc mismatch in batch at offset $offset: stored 0x[0-9a-f]{8}, computed",
        in_batches=True,
    ),
    CopyCase(
        "high bit flip in a batch length",
        damage.flip_length_high_bit,
        TruncatedDataError,
        BATCH + r"batch at offset $offset needs \d+ bytes but only \d+ remain",
        in_batches=True,
    ),
    CopyCase(
        "low bit flip in a batch length",
        damage.flip_length_low_bit,
        CorruptRecordError,
        BATCH + r"crc mismatch in batch at offset $offset",
        in_batches=True,
    ),
    CopyCase(
        ".index entry past the end of the .log",
        damage.index_past_end,
        CorruptIndexError,
        BATCH + r"entry for offset \d+ points to byte $position, past the end of the \d+-byte log",
    ),
    CopyCase(
        ".timeindex out of order",
        damage.time_index_out_of_order,
        CorruptIndexError,
        BATCH + r"entry -?\d+/\d+ goes back from",
    ),
    CopyCase(
        ".index missing",
        damage.remove_offset_index,
        MissingFileError,
        r"$file: required segment file is missing",
    ),
    CopyCase(
        "producer snapshot missing",
        damage.remove_next_snapshot,
        MissingFileError,
        r"$file: producer snapshot required for upload",
    ),
    CopyCase(
        "leader-epoch-checkpoint with version 1",
        damage.epoch_checkpoint_bad_version,
        CorruptCheckpointError,
        r"$file: line 1: unrecognized version 1",
    ),
    CopyCase(
        "leader-epoch-checkpoint with the wrong count",
        damage.epoch_checkpoint_wrong_count,
        CorruptCheckpointError,
        r"$file: line 2: expected $count entries but found \d+",
    ),
    CopyCase(
        "leader-epoch-checkpoint with a non-numeric epoch",
        damage.epoch_checkpoint_not_numeric,
        CorruptCheckpointError,
        r"$file: line 3: malformed entry 'x \d+'",
    ),
    CopyCase(
        "partition.metadata with another topic id",
        damage.foreign_topic_id,
        TopicIdMismatchError,
        r"$file: topic id $foreign differs from $registered registered for topic orders",
    ),
    CopyCase(
        "bit flip in a partition without transactions",
        damage.flip_payload_bit,
        CorruptRecordError,
        BATCH + r"crc mismatch in batch at offset $offset",
        target=("payments", 0),
        in_batches=True,
    ),
    CopyCase(
        "bit flip, chunked encrypted layout",
        damage.flip_payload_bit,
        CorruptRecordError,
        BATCH + r"crc mismatch in batch at offset $offset",
        layout="chunked-encrypted",
        in_batches=True,
    ),
    CopyCase(
        "producer snapshot missing, chunked encrypted layout",
        damage.remove_next_snapshot,
        MissingFileError,
        r"$file: producer snapshot required for upload",
        target=("payments", 0),
        layout="chunked-encrypted",
    ),
]


def copy_every_partition(t: Tiered) -> dict[Key, Exception]:
    """One copy per partition, each isolated from the others' failures, like the DAG's tasks."""
    errors: dict[Key, Exception] = {}
    for log_ in t.logs():
        try:
            copy_partition(log_, t.store, t.rsm, owner="corpus")
        except Exception as exc:  # the case decides which error is right
            errors[log_.key] = exc
    return errors


def files_of(log_: PartitionLog) -> dict[Path, bytes]:
    return {path: path.read_bytes() for path in log_.path.iterdir() if path.is_file()}


def restore(log_: PartitionLog, saved: dict[Path, bytes]) -> None:
    for path, data in saved.items():
        path.write_bytes(data)


def allowed_before(ranges: list[tuple[int, int]], blocked: int | None) -> list[tuple[int, int]]:
    """The segments a failed copy still finishes: those below the damage, in offset order."""
    if blocked is None:
        return []
    return [r for r in ranges if r[0] < blocked]


ABANDONED = [
    (None, S.COPY_SEGMENT_STARTED),
    (S.COPY_SEGMENT_STARTED, S.DELETE_SEGMENT_STARTED),
    (S.DELETE_SEGMENT_STARTED, S.DELETE_SEGMENT_FINISHED),
]


def assert_no_partial_state(
    t: Tiered, target: Key, finished: list[tuple[int, int]], abandoned: list[tuple[int, int]]
) -> None:
    topic = t.store.topic(target[0])
    rows = t.store.segments(topic.topic_id, target[1])
    assert [(r.start_offset, r.end_offset) for r in rows] == finished + abandoned
    for row in rows:
        events = t.store.events(segment_id=row.segment_id)
        expected = (
            ABANDONED
            if (row.start_offset, row.end_offset) in abandoned
            else [
                (None, S.COPY_SEGMENT_STARTED),
                (S.COPY_SEGMENT_STARTED, S.COPY_SEGMENT_FINISHED),
            ]
        )
        assert [(e.from_state, e.to_state) for e in events] == expected
    segment_events = [
        e for e in t.store.events(topic_id=topic.topic_id, partition=target[1]) if e.segment_id
    ]
    assert len(segment_events) == 2 * len(finished) + 3 * len(abandoned)
    state = t.store.partition(topic.topic_id, target[1])
    assert state is None or state.lease_owner is None
    assert set(t.rsm.objects.list()) == recorded_keys(t)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_broken_local_input(tmp_path: Path, case: CopyCase) -> None:
    t = build_tiered(tmp_path, layout=case.layout)
    expected = {log_.key: eligible(log_) for log_ in t.logs()}
    target = t.log(*case.target)
    saved = files_of(target)
    struck = case.damage(target)
    local = digest_tree(t.settings.log_dirs[0])

    errors = copy_every_partition(t)

    assert set(errors) == {case.target}, errors
    error = errors[case.target]
    assert isinstance(error, case.error), repr(error)
    assert re.search(pattern(case.message, struck.names), str(error)), str(error)
    assert digest_tree(t.settings.log_dirs[0]) == local
    for key, ranges in expected.items():
        if key != case.target:
            assert finished_ranges(t, *key) == ranges, key
    before = allowed_before(expected[case.target], struck.blocked)
    from_damage = expected[case.target][len(before) :] if case.in_batches else []
    assert_no_partial_state(t, case.target, before, from_damage)

    restore(target, saved)
    assert copy_every_partition(t) == {}
    for key, ranges in expected.items():
        assert finished_ranges(t, *key) == ranges, key
    assert set(t.rsm.objects.list()) == recorded_keys(t)
