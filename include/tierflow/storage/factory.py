"""Build the configured storage manager from settings.

A plain path or ``file://`` URL is a local directory bucket (the embedded default). The layout
is Aiven's chunked one (optionally compressed and encrypted) or plain: one object per file.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from tierflow.storage.local import LocalDirectoryObjectStore
from tierflow.storage.object_store import ObjectStore
from tierflow.storage.plain import PlainRemoteStorageManager
from tierflow.storage.remote_storage_manager import RemoteStorageManager

if TYPE_CHECKING:
    from tierflow.config import Settings


class UnsupportedStorageURLError(ValueError):
    pass


def open_object_store(url: str) -> ObjectStore:
    parsed = urlparse(url)
    if parsed.scheme in ("", "file"):
        return LocalDirectoryObjectStore(Path(parsed.path if parsed.scheme else url))
    raise UnsupportedStorageURLError(
        f"remote storage {url!r}: unsupported scheme {parsed.scheme!r} (supported: a path, file://)"
    )


def open_remote_storage(settings: Settings) -> RemoteStorageManager:
    objects = open_object_store(settings.remote_storage)
    if settings.storage_layout == "plain":
        return PlainRemoteStorageManager(objects, settings.storage_prefix)
    from tierflow.storage.chunk_cache import ChunkCache
    from tierflow.storage.chunked import ChunkedRemoteStorageManager
    from tierflow.transform.keyring import KeyRing

    cache = None
    if settings.chunk_cache_bytes or settings.chunk_cache_disk_bytes:
        cache = ChunkCache(
            settings.chunk_cache_bytes,
            disk_dir=settings.chunk_cache_dir,
            disk_bytes=settings.chunk_cache_disk_bytes,
            prefetch_chunks=settings.chunk_prefetch,
        )
    return ChunkedRemoteStorageManager(
        objects,
        settings.storage_prefix,
        chunk_size=settings.chunk_size,
        compression=settings.compression,
        compression_heuristic=settings.compression_heuristic,
        key_ring=KeyRing.load(settings.keyring) if settings.keyring else None,
        cache=cache,
    )
