"""Prepare's segment checks on several processes give what the one-by-one check gives: the same
facts in offset order, and a corrupt segment refused at its place with its file and byte named
(the error crosses the process boundary whole)."""

from __future__ import annotations

from pathlib import Path

from tests.support.tiered import build_tiered
from tierflow.kafka.errors import CorruptRecordError
from tierflow.lifecycle.copy.candidates import candidate_segments
from tierflow.lifecycle.copy.segment_facts import checked_segments


def candidates_of(tmp_path: Path):
    t = build_tiered(tmp_path)
    log_ = t.log("orders", 0)
    found = candidate_segments(
        log_.segments(), from_offset=log_.log_start_offset(), upper_bound=log_.high_watermark()
    )
    assert len(found) >= 3
    return log_, found


def test_processes_find_the_same_facts_in_order(tmp_path: Path) -> None:
    log_, candidates = candidates_of(tmp_path)
    alone = list(checked_segments(log_, candidates, workers=1))
    spread = list(checked_segments(log_, candidates, workers=2))
    assert [c.base_offset for c, _ in spread] == [c.base_offset for c in candidates]
    assert [facts for _, facts in spread] == [facts for _, facts in alone]


def test_a_corrupt_segment_is_refused_at_its_place_with_its_position(tmp_path: Path) -> None:
    log_, candidates = candidates_of(tmp_path)
    path = candidates[1].segment.log_path
    data = bytearray(path.read_bytes())
    data[80] ^= 0xFF  # inside the first batch's records: its CRC no longer matches
    path.write_bytes(bytes(data))
    alone = list(checked_segments(log_, candidates, workers=1))
    spread = list(checked_segments(log_, candidates, workers=2))
    refused = [facts for _, facts in spread if isinstance(facts, Exception)]
    assert [type(e) for e in refused] == [CorruptRecordError]
    assert isinstance(spread[1][1], CorruptRecordError)
    assert str(spread[1][1]) == str(alone[1][1]) and str(path) in str(spread[1][1])
    assert spread[1][1].position == alone[1][1].position == 0
