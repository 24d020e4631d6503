"""A segment's ``.txnindex``: the aborted transactions whose ABORT marker is in the segment.

Consumers in read_committed mode need these to skip aborted records, so tiered storage uploads
the file with the segment. Kafka creates it lazily, so it is often absent.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from tierflow.kafka._fs import read_file_bytes, write_atomically
from tierflow.kafka.errors import CorruptIndexError

ENTRY = struct.Struct(">hqqqq")  # version, producerId, firstOffset, lastOffset, lastStableOffset


@dataclass(frozen=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int
    version: int = 0


def read_txn_index(path: str | Path, *, base_offset: int | None = None) -> list[AbortedTxn]:
    """All entries; a trailing partial entry is ignored, as Kafka does after a crash.

    ``base_offset`` adds Kafka's sanity check that no entry ends before the segment starts.
    """
    return txn_index_entries(read_file_bytes(path), path, base_offset=base_offset)


def txn_index_entries(
    data: bytes, source: str | Path, *, base_offset: int | None = None
) -> list[AbortedTxn]:
    """The entries of an index's bytes (a file, or a remote copy named by ``source``)."""
    entries: list[AbortedTxn] = []
    for pos in range(0, len(data) - ENTRY.size + 1, ENTRY.size):
        # Kafka reads the version as one byte at offset 0 (the high byte of the int16).
        if data[pos] > 0:
            raise CorruptIndexError(
                source, pos, f"unsupported aborted-txn entry version {data[pos]}"
            )
        version, pid, first, last, lso = ENTRY.unpack_from(data, pos)
        if base_offset is not None and last < base_offset:
            raise CorruptIndexError(
                source, pos, f"last offset {last} is before the segment base offset {base_offset}"
            )
        entries.append(AbortedTxn(pid, first, last, lso, version))
    return entries


def txn_index_bytes(entries: Iterable[AbortedTxn]) -> bytes:
    return b"".join(
        ENTRY.pack(e.version, e.producer_id, e.first_offset, e.last_offset, e.last_stable_offset)
        for e in entries
    )


def write_txn_index(path: str | Path, entries: Iterable[AbortedTxn]) -> None:
    write_atomically(path, txn_index_bytes(entries))


def collect_aborted(
    entries: Iterable[AbortedTxn], fetch_offset: int, upper_bound: int
) -> tuple[list[AbortedTxn], bool]:
    """Kafka's collectAbortedTxns: the hits in [fetch_offset, upper_bound) and whether done.

    Complete means some entry's last stable offset reaches ``upper_bound``, so later segments
    cannot hold more relevant aborts; otherwise the caller continues with the next segment.
    """
    hits: list[AbortedTxn] = []
    for e in entries:
        if e.last_offset >= fetch_offset and e.first_offset < upper_bound:
            hits.append(e)
        if e.last_stable_offset >= upper_bound:
            return hits, True
    return hits, False
