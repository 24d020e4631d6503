"""Storage errors always name the key, so an operator can find the object."""

from __future__ import annotations


class RemoteStorageError(Exception):
    def __init__(self, key: str, reason: str) -> None:
        super().__init__(f"{key}: {reason}")
        self.key = key
        self.reason = reason


class RemoteResourceNotFoundError(RemoteStorageError):
    """The object does not exist (Kafka's RemoteResourceNotFoundException)."""


class VerificationError(RemoteStorageError):
    """An uploaded object does not match what was uploaded: the copy must not be FINISHED."""


class InvalidKeyError(RemoteStorageError):
    """A key that would escape the bucket root or is otherwise unusable."""


class TransientStorageError(RemoteStorageError):
    """A failure that may pass (a timeout, a dropped connection, a 5xx): worth retrying."""
