"""OffsetIndex/TimeIndex.from_bytes: remote index bytes get the same checks as files."""

from __future__ import annotations

from pathlib import Path

import pytest

from tierflow.kafka.errors import CorruptIndexError
from tierflow.kafka.offset_index import OffsetIndex, OffsetPosition, offset_index_bytes
from tierflow.kafka.time_index import TimeIndex, TimestampOffset, time_index_bytes

BASE = 1000
OFFSETS = [OffsetPosition(1010, 4096), OffsetPosition(1025, 8200)]
TIMES = [TimestampOffset(1_700_000_000_000, 1010), TimestampOffset(1_700_000_000_500, 1025)]


def test_offset_index_from_bytes_equals_reading_the_file(tmp_path: Path) -> None:
    data = offset_index_bytes(BASE, OFFSETS)
    path = tmp_path / "x.index"
    path.write_bytes(data)
    assert (
        OffsetIndex.from_bytes(data, BASE, source="k").entries
        == OffsetIndex.read(path, BASE).entries
    )
    assert OffsetIndex.from_bytes(data + bytes(80), BASE, source="k").entries == OFFSETS
    assert OffsetIndex.from_bytes(b"", BASE, source="k").entries == []


def test_time_index_from_bytes_equals_reading_the_file(tmp_path: Path) -> None:
    data = time_index_bytes(BASE, TIMES)
    path = tmp_path / "x.timeindex"
    path.write_bytes(data)
    assert (
        TimeIndex.from_bytes(data, BASE, source="k").entries == TimeIndex.read(path, BASE).entries
    )
    assert TimeIndex.from_bytes(data + bytes(24), BASE, source="k").entries == TIMES


def test_bad_remote_index_bytes_name_their_source() -> None:
    with pytest.raises(CorruptIndexError, match=r"bucket/key\.index: byte 16: .*multiple of the 8"):
        OffsetIndex.from_bytes(
            offset_index_bytes(BASE, OFFSETS) + b"\x01", BASE, source="bucket/key.index"
        )
    backwards = offset_index_bytes(BASE, OFFSETS[:1]) + offset_index_bytes(BASE, OFFSETS[:1])
    with pytest.raises(CorruptIndexError, match="seg OFFSET: byte 8: offset 1010 is not above"):
        OffsetIndex.from_bytes(backwards, BASE, source="seg OFFSET")
    with pytest.raises(CorruptIndexError, match=r"t\.timeindex: byte 24: .*multiple of the 12"):
        TimeIndex.from_bytes(time_index_bytes(BASE, TIMES) + b"\x01", BASE, source="t.timeindex")
