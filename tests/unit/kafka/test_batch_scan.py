"""BatchScan, fed a segment in chunks of any size, against ``iter_batches`` reading the whole
file: the same batches, and for damaged data the same error (class, file, byte, words). The
walk's CRCs are kafka-python's; the scan's fast path is its own."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.unit.kafka.log_builders import (
    GZIP,
    NO_CODEC,
    ZSTD,
    control_batch,
    legacy_message_set,
    v2_batch,
)
from tierflow.kafka.batch_scan import BatchFacts, BatchScan
from tierflow.kafka.errors import KafkaFormatError
from tierflow.kafka.record_batch import iter_batches


def _segment(seed: int) -> bytes:
    """Batches a broker could have written over the years: v0/v1 messages, then v2 batches of
    several epochs and codecs, a transaction marker among them."""
    rng = random.Random(seed)
    parts, offset = [], 0
    for magic in (0, 1)[: rng.randrange(3)]:
        count = rng.randrange(1, 4)
        parts.append(legacy_message_set(magic, offset, count, codec=rng.choice((NO_CODEC, GZIP))))
        offset += count
    epoch = rng.randrange(3)
    for _ in range(rng.randrange(1, 12)):
        count = rng.randrange(1, 30)
        epoch += rng.random() < 0.3
        codec = rng.choice((NO_CODEC, GZIP, ZSTD))
        parts.append(v2_batch(offset, count, codec=codec, leader_epoch=epoch))
        offset += count
        if rng.random() < 0.1:
            parts.append(control_batch(offset, producer_id=7, abort=False, leader_epoch=epoch))
            offset += 1
    return b"".join(parts)


def _damaged(data: bytes, damage: str, where: float) -> bytes:
    spot = int(where * (len(data) - 1))
    if damage == "flip":
        return data[:spot] + bytes([data[spot] ^ 0x10]) + data[spot + 1 :]
    if damage == "cut":
        return data[:spot]
    if damage == "zero tail":
        return data + bytes(spot % 300)
    return data


def _expected(path: Path) -> tuple[list[BatchFacts], str | None]:
    found: list[BatchFacts] = []
    try:
        for h in iter_batches(path, validate_crc=True):
            found.append(
                BatchFacts(h.base_offset, h.last_offset, h.partition_leader_epoch, h.max_timestamp)
            )
    except KafkaFormatError as exc:
        return found, f"{type(exc).__name__}: {exc}"
    return found, None


def _scanned(path: Path, data: bytes, cuts: list[int]) -> tuple[list[BatchFacts], str | None]:
    scan = BatchScan(str(path), 0, len(data))
    found: list[BatchFacts] = []
    edges = sorted({0, len(data), *(c % (len(data) + 1) for c in cuts)})
    try:
        for start, end in itertools.pairwise(edges):
            found += scan.feed(data[start:end])
        found += scan.finish()
    except KafkaFormatError as exc:
        return found, f"{type(exc).__name__}: {exc}"
    return found, None


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    seed=st.integers(0, 10_000),
    damage=st.sampled_from(["none", "flip", "cut", "zero tail"]),
    where=st.floats(0, 1),
    cuts=st.lists(st.integers(0, 1 << 20), max_size=12),
)
def test_chunked_scan_is_the_file_walk(
    tmp_path: Path, seed: int, damage: str, where: float, cuts: list[int]
) -> None:
    data = _damaged(_segment(seed), damage, where)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    found, error = _scanned(path, data, cuts)
    expected, expected_error = _expected(path)
    assert error == expected_error
    # A chunk that raises takes its own batches with it: those before are the walk's.
    assert found == expected if error is None else expected[: len(found)] == found


def test_a_batch_longer_than_the_file_is_named_before_the_rest_is_read(tmp_path: Path) -> None:
    """A flipped high bit in a length claims gigabytes: refused at once, not buffered."""
    first, second = v2_batch(0, 3), v2_batch(3, 3)
    broken = bytearray(first + second)
    broken[len(first) + 8] ^= 0x40
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(bytes(broken))
    scan = BatchScan(str(path), 0, len(broken))
    assert len(scan.feed(bytes(broken[: len(first) + 20]))) == 1
    try:
        scan.feed(bytes(broken[len(first) + 20 :]))
    except KafkaFormatError as exc:
        assert str(exc) == _expected(path)[1].split(": ", 1)[1]
    else:
        raise AssertionError("the impossible length was not refused")
