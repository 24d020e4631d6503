"""KIP-966's fields replayed (ELR, LastKnownElr) and which brokers the controller could elect.

Kafka 4's PartitionRecord and PartitionChangeRecord v2 carry them as tagged fields: absent in a
change means unchanged, null before v2 means none. A broker the controller may elect is
registered, unfenced and not in controlled shutdown (ClusterControlManager.isActive).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tierflow.kafka.metadata_log import read_metadata_log
from tierflow.kafka.metadata_log import records as r
from tierflow.kafka.metadata_log.writer import (
    MetadataLogWriter,
    broker_change_record,
    metadata_version_record,
    partition_change,
    partition_record,
    register_broker_record,
    topic_record,
)

ORDERS = "AAAAAAAAAAAAAAAAAAAAAg"


def _orders(path: Path, version: int = 2, **elr: list[int]) -> MetadataLogWriter:
    writer = MetadataLogWriter(path)
    writer.append(metadata_version_record(), *(register_broker_record(b, b) for b in (1, 2, 3)))
    writer.append(
        topic_record("orders", ORDERS),
        partition_record(ORDERS, 0, [1, 2, 3], version=version, **elr),
    )
    return writer


def test_the_last_isr_member_leaving_fills_elr_and_last_known_elr(tmp_path: Path) -> None:
    """Replicas 1, 2, 3 shut down in turn with KIP-966 on, min.insync.replicas 2: what
    PartitionChangeBuilder writes for each, replayed."""
    writer = _orders(tmp_path)
    writer.append(partition_change(ORDERS, 0, leader=2, isr=[2, 3]))
    writer.append(partition_change(ORDERS, 0, leader=3, isr=[3], elr=[2]))
    writer.append(
        partition_change(ORDERS, 0, leader=r.NO_LEADER, isr=[], elr=[2, 3], last_known_elr=[3])
    )
    p = read_metadata_log(tmp_path).partitions[("orders", 0)]
    assert (p.leader, p.leader_epoch, p.isr, p.elr, p.last_known_elr) == (-1, 3, (), (2, 3), (3,))
    # A change that does not name them leaves them as they were.
    writer.append(partition_change(ORDERS, 0, replicas=[1, 2, 3]))
    again = read_metadata_log(tmp_path).partitions[("orders", 0)]
    assert (again.elr, again.last_known_elr) == ((2, 3), (3,))
    writer.append(partition_change(ORDERS, 0, leader=3, isr=[3], elr=[2], last_known_elr=[]))
    back = read_metadata_log(tmp_path).partitions[("orders", 0)]
    assert (back.leader, back.elr, back.last_known_elr) == (3, (2,), ())


@pytest.mark.parametrize(
    ("version", "fields", "expected"),
    [
        (1, {}, ((), ())),
        (2, {}, ((), ())),
        (2, {"elr": [1], "last_known_elr": [2]}, ((1,), (2,))),
    ],
    ids=["v1-has-none", "v2-absent", "v2-present"],
)
def test_partition_record_elr(
    tmp_path: Path, version: int, fields: dict, expected: tuple[tuple[int, ...], ...]
) -> None:
    _orders(tmp_path, version, **fields)
    p = read_metadata_log(tmp_path).partitions[("orders", 0)]
    assert (p.elr, p.last_known_elr) == expected


def test_snapshot_keeps_elr(tmp_path: Path) -> None:
    writer = _orders(tmp_path)
    writer.append(partition_change(ORDERS, 0, leader=r.NO_LEADER, isr=[], elr=[1, 2]))
    writer.roll()
    writer.snapshot(read_metadata_log(tmp_path))
    (tmp_path / "00000000000000000000.log").unlink()
    p = read_metadata_log(tmp_path).partitions[("orders", 0)]
    assert (p.leader, p.isr, p.elr) == (-1, (), (1, 2))


def test_a_broker_is_active_only_unfenced_and_not_shutting_down(tmp_path: Path) -> None:
    writer = _orders(tmp_path)  # registered fenced, as a broker registers
    writer.append(*(broker_change_record(b, b, fenced=False) for b in (1, 2)))
    writer.append(broker_change_record(2, 2, in_controlled_shutdown=True))
    image = read_metadata_log(tmp_path)
    assert [b for b in (1, 2, 3, 4) if image.broker_active(b)] == [1]
    writer.append(broker_change_record(1, 1, fenced=True))
    assert not read_metadata_log(tmp_path).broker_active(1)
