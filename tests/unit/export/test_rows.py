"""Records as rows, as a read_committed consumer sees them, kafka-python parsing the batches:
an aborted transaction and the control markers are left out, a committed one kept; a
transaction whose marker has not come yet holds the stable offset back; values parse as JSON
into value_json or count as failures; the rows are cut by UTC day."""

from __future__ import annotations

import json

from tierflow.export.rows import Rows, by_day
from tierflow.kafka.batch_builder import (
    PLAIN_PRODUCER,
    ProducerFields,
    Record,
    build_batch,
    build_control_batch,
)
from tierflow.kafka.read_committed import OpenTransactions, committed_batches, kafka_python_batches
from tierflow.kafka.txn_index import AbortedTxn

DAY_MS = 86_400_000
T0 = 1_789_000_000_000 - 1_789_000_000_000 % DAY_MS + DAY_MS - 1_500  # just before midnight


def data(offset: int, values: list[bytes], pid: int = -1) -> bytes:
    """A batch of ``values``, one second apart; transactional when it has a producer."""
    records = [Record(b"k", v, T0 + 1000 * i) for i, v in enumerate(values)]
    producer = ProducerFields(pid, 0, 0, transactional=True) if pid >= 0 else PLAIN_PRODUCER
    return build_batch(records, base_offset=offset, leader_epoch=3, producer=producer)


def marker(offset: int, pid: int, commit: bool) -> bytes:
    return build_control_batch(
        base_offset=offset, leader_epoch=3, producer_id=pid, producer_epoch=0, commit=commit,
        timestamp=T0,
    )  # fmt: skip


LOG = b"".join(
    [
        data(0, [b'{"a": 1}', b"not json"]),  # 0-1
        data(2, [b'{"aborted": true}'], pid=7),  # 2, aborted at 4
        data(3, [b'{"b": [1, 2]}'], pid=8),  # 3, committed at 5
        marker(4, 7, commit=False),
        marker(5, 8, commit=True),
        data(6, [b'{"c": null}'], pid=9),  # 6, its marker not here yet
        data(7, [b"[]"]),  # 7
    ]
)


def test_aborted_and_control_records_are_left_out() -> None:
    aborted = [AbortedTxn(7, 2, 4, 2)]
    rows, open_txns = Rows(0, value_json=True), OpenTransactions()
    for batch in committed_batches(open_txns.tracking(kafka_python_batches(LOG)), aborted):
        rows.add(batch)
    assert open_txns.stable_offset(8) == 6, "producer 9's transaction is still open"
    table = rows.table(below_offset=6)
    assert table["offset"].to_pylist() == [0, 1, 3]
    assert table["value_json"].to_pylist() == ['{"a":1}', None, '{"b":[1,2]}']
    assert rows.json_failures == 1
    assert table["is_transactional"].to_pylist() == [False, False, True]
    assert table["leader_epoch"].to_pylist() == [3, 3, 3]
    assert table["timestamp_type"].to_pylist() == ["CreateTime"] * 3
    assert json.loads(table["value_json"][2].as_py()) == {"b": [1, 2]}
    everything = rows.table()
    assert everything["offset"].to_pylist() == [0, 1, 3, 6, 7]


def test_rows_are_cut_by_day() -> None:
    rows = Rows(0)
    for batch in kafka_python_batches(data(0, [b"x", b"y", b"z"])):  # across midnight
        rows.add(batch)
    days = by_day(rows.table())
    assert [d["offset"].to_pylist() for d in days] == [[0, 1], [2]]  # midnight after 1
