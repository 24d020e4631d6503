"""Reading ``__cluster_metadata-0`` offline, the way a broker's metadata loader replays it.

The newest complete snapshot (``<endOffset>-<epoch>.checkpoint``) gives the state of log offsets
below its end offset; the log segments' records from that offset on are replayed after it, in
offset order. Control batches (leader changes, snapshot header and footer) carry no metadata.
Records between a BeginTransactionRecord and its EndTransactionRecord apply together, an
AbortTransactionRecord discards them, and a transaction still open at the tail is not applied
(Kafka's MetadataBatchLoader).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kafka.protocol.api_data import ApiData

from tierflow.kafka.errors import CorruptMetadataRecordError
from tierflow.kafka.metadata_log import records as r
from tierflow.kafka.metadata_log.image import MetadataImage
from tierflow.kafka.metadata_log.replay import ReplayError, ReplayState
from tierflow.kafka.naming import LOG_SUFFIX, METADATA_PARTITION_DIR
from tierflow.kafka.record_batch import iter_batch_records, iter_batches

log = logging.getLogger(__name__)

CHECKPOINT_SUFFIX = ".checkpoint"


@dataclass(frozen=True)
class Snapshot:
    path: Path
    end_offset: int  # the first log offset not contained in the snapshot
    epoch: int


@dataclass(frozen=True)
class _Located:
    """A data record and where it sits, so an error can name the file and offset."""

    path: Path
    position: int  # byte position of its batch
    offset: int
    value: bytes | None


@dataclass
class _Transactions:
    """Buffers the records of an open metadata transaction (KIP-868)."""

    open: bool = False
    buffered: list[ApiData] = field(default_factory=list)


def latest_snapshot(partition_dir: Path) -> Snapshot | None:
    """The newest ``.checkpoint`` by (end offset, epoch); ``.part`` and ``.deleted`` are skipped."""
    found = []
    for path in partition_dir.glob(f"*{CHECKPOINT_SUFFIX}"):
        offset, sep, epoch = path.name[: -len(CHECKPOINT_SUFFIX)].partition("-")
        if sep and len(offset) == 20 and len(epoch) == 10 and offset.isdigit() and epoch.isdigit():
            found.append(Snapshot(path, int(offset), int(epoch)))
    return max(found, key=lambda s: (s.end_offset, s.epoch), default=None)


def log_segments(partition_dir: Path) -> list[Path]:
    """``<20-digit base offset>.log`` files by base offset."""
    paths = [
        p
        for p in partition_dir.glob(f"*{LOG_SUFFIX}")
        if len(p.name) == 20 + len(LOG_SUFFIX) and p.name[:20].isdigit()
    ]
    return sorted(paths, key=lambda p: int(p.name[:20]))


def log_end_offset(partition_dir: Path) -> int:
    """The next offset of the metadata log (or of its newest snapshot, if the log is behind)."""
    end = 0
    for path in reversed(log_segments(partition_dir)):
        last = None
        for header in iter_batches(path, validate_crc=False):
            last = header.last_offset
        end = int(path.name[:20]) if last is None else last + 1
        if last is not None:
            break
    snapshot = latest_snapshot(partition_dir)
    return max(end, snapshot.end_offset if snapshot else 0)


def _data_records(path: Path, start: int = 0) -> Iterator[_Located]:
    """The data records of one file at offsets >= ``start``, control batches left out."""
    for header, batch in iter_batch_records(path):
        if header.is_control_batch or header.last_offset < start:
            continue
        for record in batch:
            if record.offset >= start:
                yield _Located(path, header.position, record.offset, record.value)


def _log_records(partition_dir: Path, start: int) -> Iterator[_Located]:
    """Log records at offsets >= ``start``, refusing a log that does not reach back to it."""
    segments = log_segments(partition_dir)
    if segments:
        first = next(iter_batches(segments[0], validate_crc=False), None)
        if first is not None and first.base_offset > start:
            raise CorruptMetadataRecordError(
                segments[0],
                first.position,
                f"the log starts at offset {first.base_offset} but the newest snapshot ends at "
                f"{start}: offsets {start}..{first.base_offset - 1} are missing",
            )
    for path in segments:
        yield from _data_records(path, start)


def _decode(located: _Located) -> ApiData | int | None:
    """The record, the apiKey of a fieldless one (NoOp, EndTransaction), or None to skip."""
    if not located.value:
        raise ValueError("a metadata record needs a value")
    frame = r.read_frame(located.value)
    if not r.knows(frame):
        if frame.api_key in r.STATE_RECORDS:
            raise ValueError(f"unsupported version {frame.version} of apiKey {frame.api_key}")
        log.debug("skipping metadata record apiKey %d v%d", frame.api_key, frame.version)
        return None
    if frame.api_key in r.EMPTY_BODY_RECORDS:
        r.check_empty_body(frame)
        return frame.api_key
    return r.decode_body(frame)


def _replay_one(state: ReplayState, txn: _Transactions, record: ApiData | int) -> None:
    if isinstance(record, r.BeginTransactionRecord):
        if txn.open:
            raise ReplayError("BeginTransactionRecord inside an open transaction")
        txn.open = True
    elif record == r.END_TRANSACTION_RECORD or isinstance(record, r.AbortTransactionRecord):
        if not txn.open:
            raise ReplayError(f"{type(record).__name__} without a BeginTransactionRecord")
        if not isinstance(record, r.AbortTransactionRecord):
            for buffered in txn.buffered:
                state.apply(buffered)
        txn.open, txn.buffered = False, []
    elif isinstance(record, int):
        return  # NoOpRecord
    elif txn.open:
        txn.buffered.append(record)
    else:
        state.apply(record)


def _replay(state: ReplayState, located_records: Iterator[_Located]) -> int:
    """Applies the records in order; returns the offset after the last one (0 if none)."""
    txn = _Transactions()
    end = 0
    for located in located_records:
        try:
            record = _decode(located)
            if record is not None:
                _replay_one(state, txn, record)
        except ValueError as exc:  # ReplayError included
            raise CorruptMetadataRecordError(
                located.path, located.position, f"record at offset {located.offset}: {exc}"
            ) from exc
        end = located.offset + 1
    if txn.open:
        log.info("metadata transaction still open at the log tail: not applied")
    return end


def read_metadata_log(partition_dir: Path) -> MetadataImage:
    """The metadata image of a ``__cluster_metadata-0`` directory: snapshot, then log."""
    partition_dir = Path(partition_dir)
    state = ReplayState()
    snapshot = latest_snapshot(partition_dir)
    start = 0
    if snapshot is not None:
        _replay(state, _data_records(snapshot.path))  # offsets inside are local to the file
        start = snapshot.end_offset
    end = _replay(state, _log_records(partition_dir, start))
    return state.image(max(start, end))


def find_metadata_image(log_dirs: Sequence[Path]) -> MetadataImage | None:
    """The image from the metadata log in ``log_dirs``; None when none holds one.

    Every KRaft node keeps a replica of the metadata log; when several log dirs (say, several
    brokers') hold one, the replica that reaches furthest is read, since a lagging follower's
    log is a prefix of the leader's.
    """
    candidates = [Path(d) / METADATA_PARTITION_DIR for d in log_dirs]
    found = [c for c in candidates if c.is_dir()]
    if not found:
        return None
    newest = max(found, key=log_end_offset)
    return read_metadata_log(newest)
