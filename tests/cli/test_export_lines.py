"""What ``tierflow export iceberg`` writes on stderr, from the installed script in a process of
its own: its last progress line counts segments, done over total, not segments over
partitions; a corrupt object fails it in one line naming the object and the chunk, without
the library's exception class, which ``-v`` still shows."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.cli.process import tierflow, tierflow_env
from tests.support.broken_remote import flip_log_chunk
from tests.support.tiered import Tiered, build_tiered
from tierflow.lifecycle.copy.steps import copy_partition
from tierflow.metadata.states import RemoteLogSegmentState as S

pytestmark = [pytest.mark.slow]

DONE = re.compile(r"^export: done, (\d+)/(\d+) segments, ")


@pytest.fixture
def tiered(tmp_path: Path) -> Tiered:
    """Both partitions of orders tiered (3 and 2 segments) and exported to Iceberg."""
    t = build_tiered(
        tmp_path,
        layout="chunked-encrypted",
        topic_configs={"orders": {"iceberg_export": True}},
    )
    for log_ in t.logs():
        if log_.topic == "orders":
            copy_partition(log_, t.store, t.rsm, owner="test")
    return t


def finished_segments(t: Tiered, topic: str) -> int:
    topic_id = t.store.topic(topic).topic_id
    return sum(
        len(t.store.segments(topic_id, p.partition, states=[S.COPY_SEGMENT_FINISHED]))
        for p in t.store.partitions(topic_id)
    )


def test_the_done_line_counts_segments(tiered: Tiered) -> None:
    done = tierflow(tierflow_env(tiered.settings), "export", "iceberg", "--topic", "orders")
    assert done.returncode == 0, done.stderr
    (last,) = [line for line in done.stderr.splitlines() if line.startswith("export: done")]
    counts = DONE.match(last)
    assert counts is not None, last
    segments = finished_segments(tiered, "orders")
    assert segments == 5 and (int(counts[1]), int(counts[2])) == (segments, segments), last


def test_a_corrupt_chunk_is_one_line_without_the_class(tiered: Tiered) -> None:
    _reader, names = flip_log_chunk(tiered)
    env = tierflow_env(tiered.settings)
    failed = tierflow(env, "export", "iceberg", "--topic", "orders")
    assert failed.returncode != 0
    errors = [line for line in failed.stderr.splitlines() if not line.startswith("export: ")]
    assert len(errors) == 1, failed.stderr
    assert errors[0].startswith(f"tierflow: error: orders-0: {names['key']}: chunk 0: ")
    assert "Error" not in errors[0] and "tierflow." not in errors[0]
    verbose = tierflow(env, "-v", "export", "iceberg", "--topic", "orders")
    assert "tierflow.transform.errors.CorruptChunkError" in verbose.stderr
