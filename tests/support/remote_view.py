"""What a read_committed consumer of the remote tier sees, read through ``fetch_remote``.

An oracle independent of the code under test: it reads whole batches from the log start to
the highest remote offset and applies the transaction markers itself (a transactional batch
counts once its producer's COMMIT follows; an ABORT drops it; a transaction still open at the
end is left out, as undecided).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from kafka.record.default_records import DefaultRecordBatch

from tierflow.metadata.store import MetadataStore
from tierflow.read.fetch import FetchRequest, fetch_remote
from tierflow.rsm import RemoteStorageManager

COMMIT = 1


@dataclass(frozen=True)
class Rec:
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int
    headers: tuple


@dataclass
class RemoteView:
    records: list[Rec]  # committed data records, in offset order
    markers: list[tuple[int, int]]  # (offset, control type) of every marker read
    aborted: int  # data records dropped by an ABORT marker

    def latest(self) -> dict[bytes, Rec]:
        return {r.key: r for r in self.records if r.key is not None}

    def live(self) -> dict[bytes, Rec]:
        """Each key's latest record, keys whose latest is a tombstone left out."""
        return {k: r for k, r in self.latest().items() if r.value is not None}


def read_remote(
    store: MetadataStore, rsm: RemoteStorageManager, topic: str, partition: int = 0
) -> RemoteView:
    state = store.partition(store.topic(topic).topic_id, partition)
    offset, end = state.log_start_offset, state.highest_remote_offset + 1
    fetched: list[tuple[int, bytes]] = []
    while offset < end:
        result = fetch_remote(
            store, rsm, FetchRequest(topic, partition, offset=offset, max_bytes=1 << 20)
        )
        fetched += [(offset, raw) for raw in result.batches]
        offset = result.next_offset
    return committed_view(fetched)


def committed_view(fetched: list[tuple[int, bytes]]) -> RemoteView:
    """(fetch offset, batch) in the order read; records below the fetch offset are skipped,
    as a consumer skips them (a batch may start before the offset asked for)."""
    view = RemoteView([], [], 0)
    open_txns: dict[int, list[Rec]] = defaultdict(list)
    for since, raw in fetched:
        batch = DefaultRecordBatch(raw)
        if batch.next_offset <= since:
            continue
        if batch.is_control_batch:
            kind = int.from_bytes(next(iter(batch)).key[2:4], "big")
            view.markers.append((batch.base_offset, kind))
            done = open_txns.pop(batch.producer_id, [])
            view.records += done if kind == COMMIT else []
            view.aborted += 0 if kind == COMMIT else len(done)
            continue
        recs = [
            Rec(r.offset, r.key, r.value, r.timestamp, tuple(r.headers))
            for r in batch
            if r.offset >= since
        ]
        if batch.is_transactional:
            open_txns[batch.producer_id] += recs
        else:
            view.records += recs
    view.records.sort(key=lambda r: r.offset)
    return view
