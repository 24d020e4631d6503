"""Read a tiered partition from remote storage: Kafka's RemoteLogManager.read and the remote
half of ListOffsets by timestamp.

By offset (R2): the offset's leader epoch, the COPY_SEGMENT_FINISHED segment serving that
(epoch, offset) as RLMM.remoteLogSegmentMetadata does (M7), the byte position from the offset
index, then ranged reads of only the bytes needed. Batches ending before the offset are
skipped; whole batches are returned up to ``max_bytes`` (at least one, like minOneMessage), and
the read continues into the next segment (end offset + 1, its epoch) when one runs out.

By timestamp (R4): Kafka's findOffsetByTimestamp gives the first record at or after the
timestamp, then the fetch proceeds from that record's offset.

Codes like R2 refer to docs/kafka-behaviours.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass, field

from kafka.record.default_records import DefaultRecordBatch
from kafka.record.legacy_records import LegacyRecordBatch

from tierflow.kafka.leader_epoch import EpochEntry
from tierflow.metadata.epochs import epoch_for_offset, lineage, next_epoch, within_lineage
from tierflow.metadata.models import RemoteLogSegment, Topic
from tierflow.metadata.states import RemoteLogSegmentState
from tierflow.metadata.store import MetadataStore
from tierflow.read.index_cache.memory import DEFAULT_INDEX_CACHE, IndexLookups
from tierflow.read.metadata_cache import RemoteLogMetadataCache
from tierflow.read.remote_reads import RemoteReads
from tierflow.read.segment_reader import RemoteBatch, SegmentBatchReader
from tierflow.rsm import RemoteStorageManager
from tierflow.segment_refs import remote_segment

DEFAULT_MAX_BYTES = 1 << 20
_FINISHED = RemoteLogSegmentState.COPY_SEGMENT_FINISHED


class RemoteFetchError(Exception):
    """A fetch that remote storage cannot answer."""


@dataclass(eq=False, repr=False)  # an exception: compared by identity, shown by its message
class OffsetOutOfRangeError(RemoteFetchError):
    """Kafka's OffsetOutOfRangeException for the remote tier."""

    topic: str
    partition: int
    offset: int
    _: KW_ONLY
    log_start_offset: int
    remote_range: tuple[int, int] | None
    leader_epoch: int | None

    def __post_init__(self) -> None:
        if self.remote_range is None:
            where = "remote storage holds no readable segments"
        else:
            where = f"remote storage holds offsets {self.remote_range[0]}-{self.remote_range[1]}"
        epoch = "not available" if self.leader_epoch is None else str(self.leader_epoch)
        super().__init__(
            f"{self.topic}-{self.partition}: offset {self.offset} is out of range ({where}; "
            f"log start offset {self.log_start_offset}; leader epoch {epoch})"
        )


class TimestampNotFoundError(RemoteFetchError):
    """No remote record has a timestamp at or after the one asked for."""

    def __init__(self, topic: str, partition: int, timestamp: int, max_remote: int | None) -> None:
        self.topic = topic
        self.partition = partition
        self.timestamp = timestamp
        latest = "no readable segments" if max_remote is None else f"latest {max_remote}"
        super().__init__(
            f"{topic}-{partition}: no remote record with timestamp >= {timestamp} ({latest})"
        )


@dataclass(frozen=True)
class TimestampMatch:
    """Kafka's TimestampAndOffset, plus where the batch was found."""

    timestamp: int
    offset: int
    leader_epoch: int | None
    segment_id: str
    position: int


@dataclass
class FetchResult:
    topic: str
    partition: int
    batches: list[bytes]  # whole record batches, exactly as stored
    first_offset: int  # base offset of the first batch (the requested offset without batches)
    next_offset: int  # offset after the last returned batch
    segments_read: list[str]
    remote_bytes_read: int  # log and index bytes taken from remote storage by this fetch
    requested_offset: int = -1  # the offset asked for, or the one the timestamp resolved to
    timestamp_match: TimestampMatch | None = None
    found: list[RemoteBatch] = field(default_factory=list, repr=False)  # headers + positions

    @property
    def size_in_bytes(self) -> int:
        return sum(len(batch) for batch in self.batches)


@dataclass(frozen=True)
class _Partition:
    topic: Topic
    partition: int
    log_start_offset: int
    metadata: RemoteLogMetadataCache
    epochs: list[EpochEntry]


@dataclass(frozen=True)
class FetchRequest:
    """What a consumer asks of one partition: whole batches from ``offset``, or from the first
    record at or after ``timestamp`` (exactly one of them), up to ``max_bytes`` (at least one
    batch, like minOneMessage)."""

    topic: str
    partition: int
    offset: int | None = None
    timestamp: int | None = None
    max_bytes: int = DEFAULT_MAX_BYTES


def fetch_remote(
    store: MetadataStore,
    rsm: RemoteStorageManager,
    request: FetchRequest,
    *,
    leader_epochs: list[EpochEntry] | None = None,
    log_end_offset: int | None = None,
    index_cache: IndexLookups | None = None,
    metadata: RemoteLogMetadataCache | None = None,
) -> FetchResult:
    """Whole batches from remote storage, as ``request`` asks.

    ``leader_epochs`` is the partition's leader-epoch cache (default: rebuilt from the remote
    segments); ``log_end_offset`` bounds the lineage check of timestamp lookups (default: past
    the last remote offset). ``metadata`` reuses a loaded RLMM view across fetches.
    ``index_cache`` is the on-disk ``tierflow.read.index_cache.RemoteIndexCache`` when one is
    configured; without it an in-process cache shared by this process's fetches is used.
    """
    offset, timestamp = request.offset, request.timestamp
    if (offset is None) == (timestamp is None):
        raise ValueError("fetch_remote needs exactly one of offset and timestamp")
    if request.max_bytes <= 0:
        raise ValueError(f"max_bytes must be positive, got {request.max_bytes}")
    part = _load(store, request.topic, request.partition, leader_epochs, metadata)
    reads = RemoteReads(rsm)
    cache = DEFAULT_INDEX_CACHE if index_cache is None else index_cache
    match = None
    if timestamp is not None:
        match = _find_offset_by_timestamp(part, reads, cache, timestamp, log_end_offset)
        if match is None:
            latest = max((s.max_timestamp_ms for s in part.metadata.finished()), default=None)
            raise TimestampNotFoundError(request.topic, request.partition, timestamp, latest)
        offset = match.offset
    assert offset is not None
    result = _read(part, reads, cache, offset, request.max_bytes, match)
    result.timestamp_match = match
    result.remote_bytes_read = reads.bytes_read
    return result


def find_offset_by_timestamp(
    store: MetadataStore,
    rsm: RemoteStorageManager,
    topic: str,
    partition: int,
    timestamp: int,
    *,
    leader_epochs: list[EpochEntry] | None = None,
    log_end_offset: int | None = None,
    index_cache: IndexLookups | None = None,
) -> TimestampMatch | None:
    """RLM.findOffsetByTimestamp: the first remote record with a timestamp >= ``timestamp``."""
    part = _load(store, topic, partition, leader_epochs, None)
    cache = DEFAULT_INDEX_CACHE if index_cache is None else index_cache
    return _find_offset_by_timestamp(part, RemoteReads(rsm), cache, timestamp, log_end_offset)


def _load(
    store: MetadataStore,
    topic_name: str,
    partition: int,
    leader_epochs: Sequence[EpochEntry] | None,
    metadata: RemoteLogMetadataCache | None,
) -> _Partition:
    topic = store.topic(topic_name)
    state = store.partition(topic.topic_id, partition)
    if metadata is None:
        metadata = RemoteLogMetadataCache.load(store, topic.topic_id, partition)
    epochs = list(leader_epochs) if leader_epochs is not None else metadata.leader_epochs()
    log_start = 0 if state is None else state.log_start_offset
    return _Partition(topic, partition, log_start, metadata, epochs)


def _segment_for(part: _Partition, offset: int) -> tuple[int | None, RemoteLogSegment | None]:
    epoch = epoch_for_offset(part.epochs, offset)
    return epoch, None if epoch is None else part.metadata.segment_for(epoch, offset)


def _out_of_range(part: _Partition, offset: int, epoch: int | None) -> OffsetOutOfRangeError:
    readable = part.metadata.readable_range()
    if readable is not None:
        readable = (max(readable[0], part.log_start_offset), readable[1])
    return OffsetOutOfRangeError(
        part.topic.name,
        part.partition,
        offset,
        log_start_offset=part.log_start_offset,
        remote_range=readable,
        leader_epoch=epoch,
    )


def _read(
    part: _Partition,
    reads: RemoteReads,
    cache: IndexLookups,
    offset: int,
    max_bytes: int,
    match: TimestampMatch | None,
) -> FetchResult:
    epoch, segment = _segment_for(part, offset)
    if offset < part.log_start_offset or segment is None:
        raise _out_of_range(part, offset, epoch)
    found: list[RemoteBatch] = []
    segments_read: list[str] = []
    total = 0
    while segment is not None:
        ref = remote_segment(part.topic, segment)
        if match is not None and match.segment_id == segment.segment_id:
            position = match.position  # the timestamp lookup already found the batch
        elif offset <= segment.start_offset:
            position = 0  # what the index lookup would say, without downloading it
        else:
            position = cache.lookup_offset(reads, ref, offset)
        reader = SegmentBatchReader(reads, ref, segment.segment_size_bytes, position)
        segments_read.append(segment.segment_id)
        while True:
            reader.read_ahead = max_bytes - total
            pending = reader.peek()
            if pending is None:
                break
            if pending.last_offset < offset:
                reader.skip(pending)
                continue
            if found and total + pending.size > max_bytes:
                return _result(part, found, segments_read, offset)
            batch = reader.take(pending)
            found.append(batch)
            total += pending.size
            if total >= max_bytes:
                return _result(part, found, segments_read, offset)
        # This segment is exhausted: RLM.findNextSegmentMetadata.
        _epoch, segment = _segment_for(part, segment.end_offset + 1)
    return _result(part, found, segments_read, offset)


def _result(
    part: _Partition, found: list[RemoteBatch], segments_read: list[str], offset: int
) -> FetchResult:
    return FetchResult(
        topic=part.topic.name,
        partition=part.partition,
        batches=[batch.data for batch in found],
        first_offset=found[0].header.base_offset if found else offset,
        next_offset=found[-1].header.last_offset + 1 if found else offset,
        segments_read=segments_read,
        remote_bytes_read=0,
        requested_offset=offset,
        found=found,
    )


def _find_offset_by_timestamp(
    part: _Partition,
    reads: RemoteReads,
    cache: IndexLookups,
    timestamp: int,
    log_end_offset: int | None,
) -> TimestampMatch | None:
    """Walk epochs from the log start's; the first FINISHED in-lineage segment with
    maxTimestamp >= ts and endOffset >= startingOffset decides (even if it then finds nothing).
    """
    starting_offset = part.log_start_offset
    if log_end_offset is None:
        ends = [s.end_offset for s in part.metadata.finished()]
        log_end_offset = max(ends, default=-1) + 1
    epochs = lineage(part.epochs)
    epoch = epoch_for_offset(part.epochs, starting_offset)
    while epoch is not None:
        for segment in part.metadata.list_segments(epoch):
            if (
                segment.max_timestamp_ms >= timestamp
                and segment.end_offset >= starting_offset
                and within_lineage(segment, log_end_offset, epochs)
                and segment.segment_state is _FINISHED
            ):
                return _lookup_timestamp(part, reads, cache, segment, timestamp, starting_offset)
        epoch = next_epoch(part.epochs, epoch)
    return None


def _lookup_timestamp(
    part: _Partition,
    reads: RemoteReads,
    cache: IndexLookups,
    segment: RemoteLogSegment,
    timestamp: int,
    starting_offset: int,
) -> TimestampMatch | None:
    ref = remote_segment(part.topic, segment)
    position = cache.lookup_timestamp(reads, ref, timestamp, starting_offset)
    reader = SegmentBatchReader(reads, ref, segment.segment_size_bytes, position)
    while (batch := reader.next_batch()) is not None:
        header = batch.header
        if header.max_timestamp < timestamp or header.last_offset < starting_offset:
            continue
        for record in _records(batch):
            if record.timestamp >= timestamp and record.offset >= starting_offset:
                epoch = header.partition_leader_epoch
                return TimestampMatch(
                    timestamp=record.timestamp,
                    offset=record.offset,
                    leader_epoch=None if epoch < 0 else epoch,
                    segment_id=segment.segment_id,
                    position=header.position,
                )
    return None


def _records(batch: RemoteBatch) -> list:
    if batch.header.magic == 2:
        return list(DefaultRecordBatch(batch.data))
    return list(LegacyRecordBatch(batch.data, batch.header.magic))
