"""Segment file names and partition directory names."""

from __future__ import annotations

import pytest

from tierflow.kafka.naming import offset_prefix, parse_offset_prefix, parse_partition_dir


def test_offset_prefix_round_trip() -> None:
    assert offset_prefix(42) == "00000000000000000042"
    assert parse_offset_prefix(offset_prefix(2**63 - 1) + ".log") == 2**63 - 1
    assert parse_offset_prefix("00000000000000000042.log.deleted") == 42
    with pytest.raises(ValueError):
        offset_prefix(-1)


@pytest.mark.parametrize("name", ["42.log", "0000000000000000004x.log", "leader-epoch-checkpoint"])
def test_parse_offset_prefix_rejects(name: str) -> None:
    with pytest.raises(ValueError):
        parse_offset_prefix(name)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("orders-3", ("orders", 3)),
        ("__consumer_offsets-49", ("__consumer_offsets", 49)),
        # A real Confluent topic: dashes and digits inside the name.
        (
            "_confluent-controlcenter-5-1-2-1-Group-ONE_MINUTE-changelog-0",
            ("_confluent-controlcenter-5-1-2-1-Group-ONE_MINUTE-changelog", 0),
        ),
        ("my.topic-with-dashes-12", ("my.topic-with-dashes", 12)),
        ("orders-3.4a1b2c3d4e5f-delete", None),
        ("orders-3.4a1b2c3d4e5f-future", None),
        ("orders-3.4a1b2c3d4e5f-stray", None),
        ("orders", None),
        ("orders-", None),
        ("-3", None),
        ("bad topic-1", None),
        ("kafka-logs", None),
    ],
    ids=lambda value: "parsed" if isinstance(value, tuple) else None,
)
def test_parse_partition_dir(name: str, expected: tuple[str, int] | None) -> None:
    assert parse_partition_dir(name) == expected
