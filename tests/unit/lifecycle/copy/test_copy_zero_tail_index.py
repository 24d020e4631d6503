"""A rolled segment's index with a zero-filled preallocated tail (a broker killed before it
trimmed the file) is uploaded as its valid entries only, and the copy says it trimmed it.

The remote bytes are checked by a small independent reader: every entry must increase, as
Kafka's OffsetIndex/TimeIndex sanity checks require, so a zero slot after real entries fails.
"""

from __future__ import annotations

import logging
import struct
from pathlib import Path

import pytest

from tests.support.settings_env import use_settings
from tests.support.tiered import build_tiered
from tierflow.cli import main
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.rsm import IndexType
from tierflow.segment_refs import remote_segment

ZERO_SLOTS = 5


def strictly_increasing(data: bytes, fmt: str) -> list[tuple[int, int]]:
    """The entries of index bytes; AssertionError unless each one's offset increases."""
    size = struct.calcsize(fmt)
    assert len(data) % size == 0
    entries = [struct.unpack(fmt, data[i : i + size]) for i in range(0, len(data), size)]
    relative = [e[0] if fmt == ">ii" else e[1] for e in entries]
    for i in range(1, len(relative)):
        assert relative[i] > relative[i - 1], f"entry {i} {entries[i]} does not increase"
    return entries


@pytest.mark.parametrize("layout", ["plain", "chunked-encrypted"])
def test_the_zero_filled_tail_is_trimmed_before_upload(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    layout: str,
) -> None:
    t = build_tiered(tmp_path, layout=layout)
    use_settings(monkeypatch, t.settings)
    segment = t.log("payments", 0).segments()[0]
    valid_index = segment.index_path.read_bytes()
    valid_time = segment.time_index_path.read_bytes()
    assert valid_index and valid_time, "the generator writes entries"
    with segment.index_path.open("ab") as f:
        f.write(bytes(8 * ZERO_SLOTS))
    with segment.time_index_path.open("ab") as f:
        f.write(bytes(12 * ZERO_SLOTS))

    with caplog.at_level(logging.INFO):
        assert main(["copy", "--topic", "payments"]) == 0

    topic = t.store.topic("payments")
    rows = t.store.segments(topic.topic_id, 0, states=[S.COPY_SEGMENT_FINISHED])
    first = next(r for r in rows if r.start_offset == segment.base_offset)
    remote = remote_segment(topic, first)
    offset_bytes = t.rsm.fetch_index(remote, IndexType.OFFSET)
    time_bytes = t.rsm.fetch_index(remote, IndexType.TIMESTAMP)
    assert offset_bytes == valid_index
    assert time_bytes == valid_time
    strictly_increasing(offset_bytes, ">ii")
    assert segment.index_path.stat().st_size == len(valid_index) + 8 * ZERO_SLOTS, "local kept"
    trimmed = [r.getMessage() for r in caplog.records if "zero-filled" in r.getMessage()]
    assert len(trimmed) == 2, trimmed
    assert any(str(segment.index_path) in m and f"{ZERO_SLOTS} " in m for m in trimmed)
    assert any(str(segment.time_index_path) in m and f"{ZERO_SLOTS} " in m for m in trimmed)
