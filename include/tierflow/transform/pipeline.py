"""The per-chunk transform (zstd, then AES-256-GCM) and its streaming application to files.

Uploads stream: ``LogTransform`` is an iterator of transformed chunks that an object store
consumes while it writes, so memory holds about one chunk, and the chunk index is known once
the iterator is exhausted. Index files go through ``index_blobs`` the same way, one index at
a time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from tierflow.kafka.index_file import SparseIndex
from tierflow.kafka.offset_index import OffsetIndex
from tierflow.kafka.time_index import TimeIndex
from tierflow.rsm import IndexType, LogSegmentData
from tierflow.transform.chunk_index import ChunkIndex, build_chunk_index
from tierflow.transform.chunking import read_chunks
from tierflow.transform.compression import ChunkCompressor, decompress_chunk
from tierflow.transform.encryption import OVERHEAD, DataKey, decrypt_chunk, encrypt_chunk
from tierflow.transform.manifest import INDEX_ORDER, IndexRange, SegmentIndexes


class ChunkTransform:
    """Forward: compress (optional) then encrypt (optional). Backward: the reverse."""

    def __init__(self, *, compression: bool, data_key: DataKey | None) -> None:
        self.compression = compression
        self.data_key = data_key
        self._compressor = ChunkCompressor() if compression else None

    def forward(self, chunk: bytes) -> bytes:
        if self._compressor is not None:
            chunk = self._compressor.compress(chunk)
        if self.data_key is not None:
            chunk = encrypt_chunk(chunk, self.data_key)
        return chunk

    def backward(
        self, blob: bytes, *, object_key: str, chunk: int | str, expected_size: int | None = None
    ) -> bytes:
        """``expected_size``, the chunk's original size, bounds what zstd may allocate."""
        if self.data_key is not None:
            blob = decrypt_chunk(blob, self.data_key, object_key=object_key, chunk=chunk)
        if self.compression:
            blob = decompress_chunk(
                blob, object_key=object_key, chunk=chunk, expected_size=expected_size
            )
        return blob

    def fixed_size(self, chunk_size: int) -> int | None:
        """Transformed size of a full chunk when it is known up front (no compression)."""
        if self.compression:
            return None
        return chunk_size + (OVERHEAD if self.data_key is not None else 0)

    def index_forward(self, data: bytes) -> bytes:
        """Indexes are never compressed, only encrypted; an empty index stays empty."""
        if not data or self.data_key is None:
            return data
        return encrypt_chunk(data, self.data_key)

    def index_backward(self, blob: bytes, *, object_key: str, index: IndexType) -> bytes:
        if not blob or self.data_key is None:
            return blob
        return decrypt_chunk(blob, self.data_key, object_key=object_key, chunk=f"{index} index")

    def index_size(self, size: int) -> int:
        return size + OVERHEAD if size and self.data_key is not None else size


class LogTransform:
    """Iterate to get the transformed chunks of ``path``; then ``chunk_index()``."""

    def __init__(self, path: Path, chunk_size: int, transform: ChunkTransform) -> None:
        self.path = path
        self.chunk_size = chunk_size
        self.transform = transform
        self.original_size = 0
        self._sizes: list[int] = []
        self._done = False

    def __iter__(self) -> Iterator[bytes]:
        if self._done or self._sizes:
            raise RuntimeError(f"{self.path}: a LogTransform is consumed once")
        for chunk in read_chunks(self.path, self.chunk_size):
            self.original_size += len(chunk)
            out = self.transform.forward(chunk)
            self._sizes.append(len(out))
            yield out
        self._done = True

    def chunk_index(self) -> ChunkIndex:
        if not self._done:
            raise RuntimeError(f"{self.path}: chunk index asked before the transform finished")
        return build_chunk_index(
            self.chunk_size,
            self.original_size,
            self._sizes,
            fixed_transformed_chunk_size=self.transform.fixed_size(self.chunk_size),
        )


@dataclass(frozen=True)
class IndexSource:
    index_type: IndexType
    name: str  # for messages: the file, or what the bytes are
    size: int
    read: Callable[[], bytes]


def _file_source(index_type: IndexType, path: Path) -> IndexSource:
    return IndexSource(index_type, str(path), path.stat().st_size, path.read_bytes)


def _bytes_source(index_type: IndexType, data: bytes) -> IndexSource:
    return IndexSource(index_type, f"{index_type.value} index", len(data), lambda: data)


def _sparse_index_source(index_type: IndexType, path: Path, kind: type[SparseIndex]) -> IndexSource:
    """An offset or time index as its valid entries: a zero-filled tail is never uploaded."""
    data, _ = kind.valid_file_bytes(path)
    return IndexSource(index_type, str(path), len(data), lambda: data)


def index_sources(data: LogSegmentData) -> list[IndexSource | None]:
    """The indexes in the order of the ``.indexes`` object; None for an absent txn index."""
    txn = data.transaction_index
    by_type: dict[IndexType, IndexSource | None] = {
        IndexType.OFFSET: _sparse_index_source(IndexType.OFFSET, data.offset_index, OffsetIndex),
        IndexType.TIMESTAMP: _sparse_index_source(IndexType.TIMESTAMP, data.time_index, TimeIndex),
        IndexType.PRODUCER_SNAPSHOT: _file_source(
            IndexType.PRODUCER_SNAPSHOT, data.producer_snapshot_index
        ),
        IndexType.LEADER_EPOCH: _bytes_source(IndexType.LEADER_EPOCH, data.leader_epoch_index),
        IndexType.TRANSACTION: None if txn is None else _file_source(IndexType.TRANSACTION, txn),
    }
    return [by_type[t] for t in INDEX_ORDER]


def index_blobs(
    data: LogSegmentData, transform: ChunkTransform
) -> tuple[SegmentIndexes, Iterator[bytes]]:
    """Positions of every index in the ``.indexes`` object, and its content as a stream.

    Positions come from the file sizes up front (a transformed index is its size, plus 28
    bytes when encrypted and non-empty); the stream checks that each file still has that size.
    """
    sources = index_sources(data)
    ranges: list[IndexRange | None] = []
    position = 0
    for source in sources:
        if source is None:
            ranges.append(None)
            continue
        size = transform.index_size(source.size)
        ranges.append(IndexRange(position, size))
        position += size
    offset, timestamp, snapshot, epoch, txn = ranges
    if offset is None or timestamp is None or snapshot is None or epoch is None:
        raise ValueError("offset, time, producer-snapshot and leader-epoch indexes are required")
    indexes = SegmentIndexes(offset, timestamp, snapshot, epoch, txn)

    def stream() -> Iterator[bytes]:
        for source, planned in zip(sources, ranges, strict=True):
            if source is None or planned is None:
                continue
            blob = transform.index_forward(source.read())
            if len(blob) != planned.size:
                raise ValueError(
                    f"{source.name}: changed size while uploading "
                    f"({len(blob)} transformed bytes, planned {planned.size})"
                )
            if blob:
                yield blob

    return indexes, stream()
