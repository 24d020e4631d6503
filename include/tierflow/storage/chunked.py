"""A storage manager writing Aiven's chunked layout: ``.log``, ``.indexes``, ``.rsm-manifest``.

The ``.log`` object is the segment cut into chunks, each optionally zstd-compressed and then
AES-256-GCM-encrypted (see tierflow.transform); ``.indexes`` holds the five indexes back to
back; the manifest, written last, is the commit marker that says where everything is. Reads of
a byte range fetch only the chunks that cover it. If a copy fails half-way, the objects already
written are deleted, as Aiven does.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import KW_ONLY, dataclass, replace
from typing import TYPE_CHECKING, Protocol

from tierflow.config import default
from tierflow.faults import crash_point
from tierflow.rsm import (
    IndexType,
    LogSegmentData,
    LogSegmentStream,
    ObjectInfo,
    RemoteResourceNotFoundError,
    RemoteSegment,
    VerificationError,
)
from tierflow.storage.chunk_reader import read_chunk_run
from tierflow.storage.keys import segment_object_key
from tierflow.storage.object_store import ObjectStore
from tierflow.storage.verification import verify_objects
from tierflow.transform.compression import first_batch_compressed, split_first_batch
from tierflow.transform.encryption import DataKey
from tierflow.transform.errors import DataKeyError, KeyRingError, ManifestError
from tierflow.transform.manifest import EncryptionMetadata, SegmentManifest, SegmentMetadata
from tierflow.transform.pipeline import ChunkTransform, LogTransform, index_blobs
from tierflow.transform.segment_files import segment_file_stream
from tierflow.transform.segment_metadata import derive_segment_metadata

if TYPE_CHECKING:
    from tierflow.transform.keyring import KeyRing

log = logging.getLogger(__name__)

ChunkLoader = Callable[[int, int], list[bytes]]


class ChunkCache(Protocol):
    """What the chunked manager asks of a chunk cache (``tierflow.read.chunk_cache`` has one)."""

    def get(self, segment: str, chunk_id: int, chunk_count: int, load: ChunkLoader) -> bytes: ...

    def discard(self, segment: str) -> None: ...


LOG, INDEXES, MANIFEST = "log", "indexes", "rsm-manifest"
MANIFEST_CACHE_ENTRIES = 1000
MAX_CHUNKS_PER_READ = 8


@dataclass(frozen=True)
class _OpenSegment:
    manifest: SegmentManifest
    transform: ChunkTransform


@dataclass(eq=False, repr=False)  # repr=False: never print the key ring
class ChunkedRemoteStorageManager:
    objects: ObjectStore
    prefix: str = ""
    _: KW_ONLY
    chunk_size: int = default("chunk_size")
    compression: bool = False
    compression_heuristic: bool = True
    key_ring: KeyRing | None = None
    cache: ChunkCache | None = None
    broker_id: int = -1

    def __post_init__(self) -> None:
        if not 1 <= self.chunk_size <= 2**30 - 1:
            raise ValueError(f"chunk size {self.chunk_size} outside [1, 2^30-1] (Aiven's range)")
        self.bytes_read = 0  # stored bytes read by the fetch paths (manifests, indexes, chunks)
        self._open_segments: OrderedDict[str, _OpenSegment] = OrderedDict()
        self._lock = threading.Lock()

    def key(self, segment: RemoteSegment, suffix: str) -> str:
        return segment_object_key(self.prefix, segment, suffix)

    def reading_through(
        self, wrap: Callable[[ObjectStore], ObjectStore]
    ) -> ChunkedRemoteStorageManager:
        """A new manager: its manifests are read again, through ``wrap``; no chunk cache."""
        return replace(self, objects=wrap(self.objects), cache=None)

    def object_keys(self, segment: RemoteSegment) -> list[str]:
        return [self.key(segment, suffix) for suffix in (LOG, INDEXES, MANIFEST)]

    # -- upload -------------------------------------------------------------------------------

    def copy_log_segment_data(
        self,
        segment: RemoteSegment,
        data: LogSegmentData,
        *,
        segment_metadata: SegmentMetadata | None = None,
    ) -> list[ObjectInfo]:
        """Write .log, .indexes, then the manifest; on any failure delete what was written."""
        stream = segment_file_stream(data, self.chunk_size)
        return self.copy_log_segment_stream(segment, stream, segment_metadata=segment_metadata)

    def copy_log_segment_stream(
        self,
        segment: RemoteSegment,
        stream: LogSegmentStream,
        *,
        segment_metadata: SegmentMetadata | None = None,
    ) -> list[ObjectInfo]:
        """The same from a stream: each chunk is transformed and uploaded as it arrives."""
        try:
            return self._copy(segment, stream, segment_metadata)
        except Exception:
            self._delete_quietly(segment)
            raise

    def _copy(
        self, segment: RemoteSegment, stream: LogSegmentStream, metadata: SegmentMetadata | None
    ) -> list[ObjectInfo]:
        log_key, indexes_key, manifest_key = self.object_keys(segment)
        head, pieces = split_first_batch(stream.log_chunks)
        compress = self._should_compress(head, segment)
        data_key = DataKey.generate() if self.key_ring is not None else None
        encryption = None
        if data_key is not None and self.key_ring is not None:
            encryption = EncryptionMetadata(self.key_ring.wrap(data_key.key), data_key.aad)
        transform = ChunkTransform(compression=compress, data_key=data_key)

        log_stream = LogTransform(pieces, self.chunk_size, transform, source=segment.describe())
        log_info = self.objects.put_chunks(log_key, log_stream)
        crash_point("rsm.after_put")
        files = stream.files()
        segment_indexes, blobs = index_blobs(files, transform)
        indexes_info = self.objects.put_chunks(indexes_key, blobs)
        crash_point("rsm.after_put")

        if metadata is None:
            metadata = derive_segment_metadata(
                segment, files, broker_id=self.broker_id, now_ms=time.time_ns() // 1_000_000
            )
        manifest = SegmentManifest(
            chunk_index=log_stream.chunk_index(),
            segment_indexes=segment_indexes,
            compression=compress,
            encryption=encryption,
            remote_log_segment_metadata=metadata.to_json(),
        )
        manifest_info = self.objects.put_bytes(manifest_key, manifest.to_bytes())
        crash_point("rsm.after_put")
        self._remember(segment, _OpenSegment(manifest, transform))
        return [log_info, indexes_info, manifest_info]

    def _should_compress(self, head: bytes, segment: RemoteSegment) -> bool:
        if not self.compression or not head:
            return False  # Aiven cannot index an empty compressed file
        if not self.compression_heuristic:
            return True
        return not first_batch_compressed(head, f"{segment.describe()} .log")

    def _delete_quietly(self, segment: RemoteSegment) -> None:
        try:
            self.objects.delete(self.object_keys(segment))
        except Exception as exc:  # the copy's own error matters more
            log.warning("%s: cleanup after a failed copy failed: %s", segment.describe(), exc)
        self._forget(segment)

    # -- verification -------------------------------------------------------------------------

    def verify(self, segment: RemoteSegment, expected: list[ObjectInfo]) -> None:
        """Sizes and sha256 of every object, then the manifest parses and matches them."""
        verify_objects(self.objects, expected)
        sizes = {info.key: info.size for info in expected}
        log_key, indexes_key, manifest_key = self.object_keys(segment)
        try:
            manifest = self._read_manifest(segment)
        except (ManifestError, RemoteResourceNotFoundError) as exc:
            raise VerificationError(manifest_key, exc.reason) from exc
        log_size = sizes.get(log_key, self._size(log_key))
        if manifest.chunk_index.transformed_file_size != log_size:
            raise VerificationError(
                log_key,
                f"{log_size} bytes, the manifest's chunks add up to "
                f"{manifest.chunk_index.transformed_file_size}",
            )
        ranges = [manifest.segment_indexes.range_for(t) for t in IndexType]
        indexes_end = max((r.position + r.size for r in ranges if r is not None), default=0)
        indexes_size = sizes.get(indexes_key, self._size(indexes_key))
        if indexes_end != indexes_size:
            raise VerificationError(
                indexes_key,
                f"{indexes_size} bytes, the manifest's indexes end at {indexes_end}",
            )

    def _size(self, key: str) -> int:
        found = self.objects.stat(key)
        if found is None:
            raise VerificationError(key, "missing right after upload")
        return found.size

    # -- reading ------------------------------------------------------------------------------

    def manifest(self, segment: RemoteSegment) -> SegmentManifest:
        """The parsed manifest, cached per segment id."""
        return self._open(segment).manifest

    def fetch_log_segment(
        self, segment: RemoteSegment, start_position: int, end_position: int | None = None
    ) -> bytes:
        """Original bytes [start_position, end_position] (inclusive, clipped to the segment),
        decoded from the chunks that cover them only."""
        if start_position < 0:
            raise ValueError(f"{segment.describe()}: negative start position {start_position}")
        opened = self._open(segment)
        index = opened.manifest.chunk_index
        last = index.original_file_size - 1
        if end_position is not None:
            last = min(last, end_position)
        chunks = index.chunks_for_range(start_position, last)
        if not chunks:
            return b""
        pieces = self._chunk_bytes(segment, opened, chunks[0].id, chunks[-1].id)
        skip = start_position - chunks[0].original_position
        return b"".join(pieces)[skip : skip + last - start_position + 1]

    def _chunk_bytes(
        self, segment: RemoteSegment, opened: _OpenSegment, first: int, last: int
    ) -> list[bytes]:
        log_key = self.key(segment, LOG)
        index = opened.manifest.chunk_index

        def load(a: int, b: int) -> list[bytes]:
            decoded, read = read_chunk_run(self.objects, log_key, index, opened.transform, a, b)
            self.bytes_read += read
            return decoded

        if self.cache is None:
            # Runs of a few chunks per GET: few requests, and no second copy of a long range.
            pieces: list[bytes] = []
            for run_start in range(first, last + 1, MAX_CHUNKS_PER_READ):
                pieces += load(run_start, min(last, run_start + MAX_CHUNKS_PER_READ - 1))
            return pieces
        name = log_key.rsplit("/", 1)[-1]
        return [
            self.cache.get(name, chunk_id, index.chunk_count, load)
            for chunk_id in range(first, last + 1)
        ]

    def iter_log_segment(self, segment: RemoteSegment) -> Iterator[bytes]:
        """The whole original segment, one chunk at a time (bypassing the chunk cache)."""
        opened = self._open(segment)
        log_key = self.key(segment, LOG)
        index = opened.manifest.chunk_index
        for chunk_id in range(index.chunk_count):
            decoded, read = read_chunk_run(
                self.objects, log_key, index, opened.transform, chunk_id, chunk_id
            )
            self.bytes_read += read
            yield decoded[0]

    def fetch_index(self, segment: RemoteSegment, index_type: IndexType) -> bytes:
        opened = self._open(segment)
        found = opened.manifest.segment_indexes.range_for(index_type)
        indexes_key = self.key(segment, INDEXES)
        if found is None:
            raise RemoteResourceNotFoundError(
                indexes_key, f"no {IndexType(index_type).value} index for {segment.describe()}"
            )
        if found.size == 0:
            return b""
        blob = self.objects.read_range(indexes_key, found.position, found.position + found.size)
        self.bytes_read += len(blob)
        if len(blob) != found.size:
            raise ManifestError(
                indexes_key,
                f"{IndexType(index_type).value} index: {len(blob)} bytes at {found.position}, "
                f"the manifest says {found.size}",
            )
        return opened.transform.index_backward(
            blob, object_key=indexes_key, index=IndexType(index_type)
        )

    # -- delete -------------------------------------------------------------------------------

    def delete_log_segment_data(self, segment: RemoteSegment) -> None:
        for key in self.object_keys(segment):
            self.objects.delete([key])
            crash_point("rsm.after_delete")
        self._forget(segment)

    # -- key rotation -------------------------------------------------------------------------

    def rewrap(self, segment: RemoteSegment) -> ObjectInfo | None:
        """Re-wrap the segment's data key under the active key id, rewriting only the manifest.

        None when the segment is unencrypted or already under the active key. The chunks and
        indexes are untouched: the data key itself does not change, only its wrapping.
        """
        if self.key_ring is None:
            raise KeyRingError("rewrap needs a key ring")
        manifest_key = self.key(segment, MANIFEST)
        manifest = self._read_manifest(segment)
        encryption = manifest.encryption
        if encryption is None or encryption.key_id == self.key_ring.active_key_id:
            return None
        data_key = self._unwrap(manifest_key, encryption)
        rewrapped = replace(
            manifest, encryption=replace(encryption, data_key=self.key_ring.wrap(data_key.key))
        )
        info = self.objects.put_bytes(manifest_key, rewrapped.to_bytes())
        crash_point("rsm.after_put")
        self._remember(segment, _OpenSegment(rewrapped, self._transform(rewrapped, data_key)))
        return info

    # -- manifests and data keys --------------------------------------------------------------

    def _open(self, segment: RemoteSegment) -> _OpenSegment:
        with self._lock:
            found = self._open_segments.get(segment.segment_id)
            if found is not None:
                self._open_segments.move_to_end(segment.segment_id)
                return found
        manifest = self._read_manifest(segment)
        data_key = None
        if manifest.encryption is not None:
            data_key = self._unwrap(self.key(segment, MANIFEST), manifest.encryption)
        opened = _OpenSegment(manifest, self._transform(manifest, data_key))
        self._remember(segment, opened)
        return opened

    @staticmethod
    def _transform(manifest: SegmentManifest, data_key: DataKey | None) -> ChunkTransform:
        return ChunkTransform(compression=manifest.compression, data_key=data_key)

    def _read_manifest(self, segment: RemoteSegment) -> SegmentManifest:
        manifest_key = self.key(segment, MANIFEST)
        try:
            data = self.objects.read_range(manifest_key)
        except RemoteResourceNotFoundError:
            raise RemoteResourceNotFoundError(
                manifest_key, f"no manifest for {segment.describe()}"
            ) from None
        self.bytes_read += len(data)
        return SegmentManifest.parse(data, object_key=manifest_key)

    def _unwrap(self, manifest_key: str, encryption: EncryptionMetadata) -> DataKey:
        key_id = encryption.key_id
        if self.key_ring is None:
            raise DataKeyError(
                manifest_key,
                key_id,
                f"the segment is encrypted under key id {key_id!r} and no key ring is configured",
            )
        try:
            return DataKey(self.key_ring.unwrap(encryption.data_key), encryption.aad)
        except KeyRingError as exc:
            raise DataKeyError(
                manifest_key, key_id, f"cannot unwrap the segment's data key: {exc}"
            ) from exc

    def _remember(self, segment: RemoteSegment, opened: _OpenSegment) -> None:
        with self._lock:
            self._open_segments[segment.segment_id] = opened
            self._open_segments.move_to_end(segment.segment_id)
            while len(self._open_segments) > MANIFEST_CACHE_ENTRIES:
                self._open_segments.popitem(last=False)

    def _forget(self, segment: RemoteSegment) -> None:
        with self._lock:
            self._open_segments.pop(segment.segment_id, None)
        if self.cache is not None:
            self.cache.discard(self.key(segment, LOG).rsplit("/", 1)[-1])
