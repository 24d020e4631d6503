"""Errors of the chunked layout: each names the object key, and the chunk or key id involved."""

from __future__ import annotations

from tierflow.rsm import RemoteStorageError


class TransformError(RemoteStorageError):
    """A stored object of the chunked layout cannot be decoded."""


class ManifestError(TransformError):
    """A ``.rsm-manifest`` that does not parse as manifest version "1"."""


class CorruptChunkError(TransformError):
    """A chunk fails its GCM tag or does not decompress: the stored bytes were changed."""

    def __init__(self, key: str, chunk: int | str, reason: str) -> None:
        super().__init__(key, f"chunk {chunk}: {reason}")
        self.chunk = chunk


class DataKeyError(TransformError):
    """The segment's data key cannot be unwrapped: its key id is unknown or the key is wrong."""

    def __init__(self, key: str, key_id: str, reason: str) -> None:
        super().__init__(key, reason)
        self.key_id = key_id


class KeyRingError(Exception):
    """A key ring file, or an operation on it, is invalid."""


class KeyNotFoundError(KeyRingError, LookupError):
    def __init__(self, key_id: str, known: list[str]) -> None:
        listed = ", ".join(known) or "none"
        super().__init__(f"key id {key_id!r} is not in the key ring (known key ids: {listed})")
        self.key_id = key_id


class WrongKeyError(KeyRingError):
    """The private key of a key id does not unwrap the data key (the PEM files were swapped)."""

    def __init__(self, key_id: str, reason: str) -> None:
        super().__init__(f"key id {key_id!r}: {reason}")
        self.key_id = key_id
