"""A cut log keeps the aborted transactions whose ABORT marker it still holds, and only those:
a transaction aborted after the cut was not aborted yet at that point of the log."""

from __future__ import annotations

import pytest

from tierflow.kafka.errors import CorruptIndexError
from tierflow.kafka.txn_index import AbortedTxn, txn_index_bytes, txn_index_entries
from tierflow.restore.cut import Cut, cut_txn_index
from tierflow.rsm import RemoteSegment

SEGMENT = RemoteSegment("orders", "oDEzXDn5SvOKKzxDqgCy9Q", 0, "seg", 100, 199)


def test_entries_ending_after_the_cut_are_dropped() -> None:
    entries = [
        AbortedTxn(7, 100, 120, 100),
        AbortedTxn(8, 110, 150, 110),  # its marker is the last kept offset
        AbortedTxn(9, 140, 180, 140),  # aborted after the cut
    ]
    data = txn_index_bytes(entries)
    assert txn_index_entries(data, "remote") == entries
    kept = cut_txn_index(data, SEGMENT, Cut(last_offset=150, size_in_bytes=4096))
    assert txn_index_entries(kept, "cut") == entries[:2]


def test_a_corrupt_remote_index_names_its_segment() -> None:
    data = bytearray(txn_index_bytes([AbortedTxn(7, 100, 120, 100)]))
    data[0] = 3  # an entry version Kafka does not know
    with pytest.raises(CorruptIndexError, match=r"orders-0 segment seg .* transaction index"):
        cut_txn_index(bytes(data), SEGMENT, Cut(last_offset=150, size_in_bytes=4096))
