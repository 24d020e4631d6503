"""The per-chunk transform (zstd, then AES-256-GCM) and its streaming application to files.

Uploads stream: ``LogTransform`` is an iterator of transformed chunks that an object store
consumes while it writes, so memory holds about one chunk, and the chunk index is known once
the iterator is exhausted. The chunks come from a file or from a segment being built (a
diskless merge); either way they are cut at the same boundaries. The indexes, known once the
``.log`` has been read, go through ``index_blobs``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from tierflow.rsm import IndexType, SegmentFiles
from tierflow.transform.chunk_index import ChunkIndex, build_chunk_index
from tierflow.transform.chunking import rechunk
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


class LogTransform:
    """Iterate to get the transformed chunks of the ``.log``; then ``chunk_index()``.

    ``pieces`` may have any sizes: they are cut into chunks of ``chunk_size``. ``source`` names
    the segment in errors.
    """

    def __init__(
        self, pieces: Iterable[bytes], chunk_size: int, transform: ChunkTransform, *, source: str
    ) -> None:
        self.pieces = pieces
        self.source = source
        self.chunk_size = chunk_size
        self.transform = transform
        self.original_size = 0
        self._sizes: list[int] = []
        self._done = False

    def __iter__(self) -> Iterator[bytes]:
        if self._done or self._sizes:
            raise RuntimeError(f"{self.source}: a LogTransform is consumed once")
        for chunk in rechunk(self.pieces, self.chunk_size):
            self.original_size += len(chunk)
            out = self.transform.forward(chunk)
            self._sizes.append(len(out))
            yield out
        self._done = True

    def chunk_index(self) -> ChunkIndex:
        if not self._done:
            raise RuntimeError(f"{self.source}: chunk index asked before the transform finished")
        return build_chunk_index(
            self.chunk_size,
            self.original_size,
            self._sizes,
            fixed_transformed_chunk_size=self.transform.fixed_size(self.chunk_size),
        )


def _by_type(files: SegmentFiles) -> dict[IndexType, bytes | None]:
    return {
        IndexType.OFFSET: files.offset_index,
        IndexType.TIMESTAMP: files.time_index,
        IndexType.PRODUCER_SNAPSHOT: files.producer_snapshot_index,
        IndexType.LEADER_EPOCH: files.leader_epoch_index,
        IndexType.TRANSACTION: files.transaction_index,
    }


def index_blobs(
    files: SegmentFiles, transform: ChunkTransform
) -> tuple[SegmentIndexes, list[bytes]]:
    """Positions of every index in the ``.indexes`` object, and its content (each index
    transformed: the same size, plus 28 bytes when encrypted and non-empty)."""
    by_type = _by_type(files)
    ranges: list[IndexRange | None] = []
    blobs: list[bytes] = []
    position = 0
    for index_type in INDEX_ORDER:
        data = by_type[index_type]
        if data is None:
            ranges.append(None)
            continue
        blob = transform.index_forward(data)
        ranges.append(IndexRange(position, len(blob)))
        position += len(blob)
        if blob:
            blobs.append(blob)
    offset, timestamp, snapshot, epoch, txn = ranges
    if offset is None or timestamp is None or snapshot is None or epoch is None:
        raise ValueError("offset, time, producer-snapshot and leader-epoch indexes are required")
    return SegmentIndexes(offset, timestamp, snapshot, epoch, txn), blobs
