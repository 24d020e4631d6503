"""Build the configured storage manager from a storage URL.

A plain path or ``file://`` URL is a local directory bucket (the embedded default).
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse

from tierflow.storage.local import LocalDirectoryObjectStore
from tierflow.storage.object_store import ObjectStore
from tierflow.storage.plain import PlainRemoteStorageManager
from tierflow.storage.remote_storage_manager import RemoteStorageManager


class UnsupportedStorageURLError(ValueError):
    pass


def open_object_store(url: str) -> ObjectStore:
    parsed = urlparse(url)
    if parsed.scheme in ("", "file"):
        return LocalDirectoryObjectStore(Path(parsed.path if parsed.scheme else url))
    raise UnsupportedStorageURLError(
        f"remote storage {url!r}: unsupported scheme {parsed.scheme!r} (supported: a path, file://)"
    )


def open_remote_storage(url: str, prefix: str = "") -> RemoteStorageManager:
    return PlainRemoteStorageManager(open_object_store(url), prefix)
