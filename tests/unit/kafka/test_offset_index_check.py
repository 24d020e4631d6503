"""``OffsetIndex.check`` (the copy's fast check) refuses exactly what ``OffsetIndex.read``
refuses, with the same error: random indexes, valid and damaged in each way read names."""

from __future__ import annotations

import random
import struct
from pathlib import Path

import pytest

from tierflow.kafka.errors import CorruptIndexError
from tierflow.kafka.offset_index import OffsetIndex

BASE = 1_000
LOG_SIZE = 1 << 20


def valid_entries(rng: random.Random, count: int) -> list[tuple[int, int]]:
    offsets = sorted(rng.sample(range(1, 50_000), count))
    positions = sorted(rng.randrange(1, LOG_SIZE) for _ in range(count))
    return list(zip(offsets, positions, strict=True))


DAMAGE = {
    "none": lambda rng, e: e,
    "offset not rising": lambda rng, e: [*e[:-1], (e[-2][0], e[-1][1])],
    "position falls": lambda rng, e: [*e[:-1], (e[-1][0], e[-2][1] - 1)],
    "negative offset": lambda rng, e: [(-5, e[0][1]), *e[1:]],
    "negative position": lambda rng, e: [(e[0][0], -1), *e[1:]],
    "past the log": lambda rng, e: [*e[:-1], (e[-1][0], LOG_SIZE)],
    "zero tail": lambda rng, e: [*e, (0, 0), (0, 0)],
}


def index_bytes(entries: list[tuple[int, int]]) -> bytes:
    return b"".join(struct.pack(">ii", offset, position) for offset, position in entries)


def outcome(method, path: Path) -> str | None:
    """The error ``method`` raises for the index at ``path``, or None."""
    try:
        method(path, BASE, log_size=LOG_SIZE)
    except CorruptIndexError as exc:
        return str(exc)
    return None


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_check_agrees_with_read(tmp_path: Path, damage: str) -> None:
    rng = random.Random(damage)
    for case in range(40):
        entries = DAMAGE[damage](rng, valid_entries(rng, rng.randrange(2, 400)))
        path = tmp_path / f"{case}.index"
        path.write_bytes(index_bytes(entries))
        read = outcome(OffsetIndex.read, path)
        checked = outcome(OffsetIndex.check, path)
        assert checked == read
        assert (read is None) == (damage in ("none", "zero tail")), read


def test_a_torn_entry_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "torn.index"
    path.write_bytes(index_bytes([(1, 10), (2, 20)]) + b"\x00\x01\x02")
    with pytest.raises(CorruptIndexError, match="not a multiple"):
        OffsetIndex.check(path, BASE, log_size=LOG_SIZE)


def test_an_empty_index_is_fine(tmp_path: Path) -> None:
    path = tmp_path / "empty.index"
    path.write_bytes(b"")
    OffsetIndex.check(path, BASE, log_size=LOG_SIZE)
