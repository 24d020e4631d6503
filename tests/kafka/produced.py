"""What the tests produce into a real broker, and the same records read back from the tier.

Each record a test sends is kept with the offset the broker gave it, so what tierflow tiered
can be compared with it record for record: offset, key, value, headers and timestamp.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from kafka import KafkaProducer
from kafka.record import MemoryRecords

from tierflow.metadata.store import MetadataStore
from tierflow.read.fetch import FetchRequest, fetch_remote
from tierflow.rsm import RemoteStorageManager

CODECS = (None, "gzip", "snappy", "lz4", "zstd")


@dataclass(frozen=True)
class Record:
    """One record as a consumer sees it."""

    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    timestamp: int


@dataclass
class Sent:
    """What was produced: every record with its offset, and which were aborted."""

    records: dict[int, Record]
    aborted: set[int]

    def between(self, first: int, last: int) -> list[Record]:
        return [self.records[o] for o in sorted(self.records) if first <= o <= last]


def send_all(producer: KafkaProducer, topic: str, batch: Iterable[Record]) -> list[Record]:
    """Send each record (its offset field ignored) and return it with the broker's offset."""
    futures = [
        (r, producer.send(topic, r.value, r.key, list(r.headers), 0, r.timestamp)) for r in batch
    ]
    producer.flush()
    out = []
    for record, future in futures:
        meta = future.get(timeout=60)
        out.append(Record(meta.offset, record.key, record.value, record.headers, record.timestamp))
    return out


def transaction(
    bootstrap: str,
    topic: str,
    batch: Iterable[Record],
    *,
    commit: bool,
    tx_id: str = "tierflow-test-tx",
) -> list[Record]:
    """``batch`` sent in one transaction (zstd), committed or aborted; with their offsets."""
    producer = KafkaProducer(
        bootstrap_servers=bootstrap, transactional_id=tx_id, compression_type="zstd"
    )
    producer.init_transactions()
    producer.begin_transaction()
    done = send_all(producer, topic, batch)
    if commit:
        producer.commit_transaction()
    else:
        producer.abort_transaction()
    producer.close()
    return done


def mixed_backlog(
    bootstrap: str, topic: str, *, plain: int, tx_id: str
) -> tuple[dict[int, Record], set[int]]:
    """``plain`` varied records (lz4), a committed then an aborted transaction of 120, and
    ``plain`` more: what a consumer must read back, by offset, and the aborted offsets."""
    now_ms = int(time.time() * 1000)
    sent: dict[int, Record] = {}
    aborted: set[int] = set()
    producer = KafkaProducer(bootstrap_servers=bootstrap, compression_type="lz4")
    for r in send_all(producer, topic, varied(plain, start_ms=now_ms - 60_000, seed=1)):
        sent[r.offset] = r
    for commit, seed in ((True, 2), (False, 3)):
        batch = varied(120, start_ms=now_ms - 30_000, seed=seed)
        for r in transaction(bootstrap, topic, batch, commit=commit, tx_id=tx_id):
            sent[r.offset] = r
            if not commit:
                aborted.add(r.offset)
    for r in send_all(producer, topic, varied(plain, start_ms=now_ms - 10_000, seed=4)):
        sent[r.offset] = r
    producer.close()
    return sent, aborted


def varied(count: int, *, start_ms: int, seed: int) -> Iterator[Record]:
    """Records of every shape: null keys and values, headers (one of them empty), values
    from a few bytes to 4 KiB of random bytes (they do not compress, so segments roll)."""
    for i in range(count):
        n = seed + i
        key = None if n % 7 == 0 else f"key-{n % 50}".encode()
        # kafka-python refuses a record with neither key nor value
        tombstone = n % 11 == 0 and key is not None
        value = None if tombstone else os.urandom(16 + (n * 997) % 4096)
        headers: tuple[tuple[str, bytes | None], ...] = ()
        if n % 3 == 0:
            headers = (("trace", f"t{n}".encode()), ("empty", b""))
        yield Record(-1, key, value, headers, start_ms + i)


def tiered_records(
    store: MetadataStore, rsm: RemoteStorageManager, topic: str, partition: int, upto: int
) -> list[Record]:
    """Every data record of the tier up to offset ``upto``, fetched as a consumer's remote
    read would, control records left out."""
    out: list[Record] = []
    offset = 0
    while offset <= upto:
        fetched = fetch_remote(store, rsm, FetchRequest(topic, partition, offset=offset))
        if not fetched.batches:
            break
        for raw in fetched.batches:
            out.extend(batch_records(raw))
        offset = fetched.next_offset
    return out


def batch_records(raw: bytes) -> Iterator[Record]:
    """The data records of record batches back to back, as a consumer sees them."""
    records = MemoryRecords(raw)
    while records.has_next():
        batch = records.next_batch()
        if batch.is_control_batch:
            continue
        for r in batch:
            headers = tuple((k, v) for k, v in r.headers)
            yield Record(r.offset, r.key, r.value, headers, r.timestamp)
