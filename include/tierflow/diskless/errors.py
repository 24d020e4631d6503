"""Errors of diskless topics; each names the topic-partition, object key or offset at fault."""

from __future__ import annotations

from tierflow.kafka.errors import KafkaFormatError


class DisklessError(Exception):
    """Base of every diskless error the CLI reports as one line."""


class WalFormatError(KafkaFormatError):
    """A WAL segment object that cannot be read: wrong version byte, stray bytes, a batch that
    disagrees with its coordinates. The message names the key and the byte position."""


class InvalidProduceBatchError(DisklessError, ValueError):
    """A produce request that is not one producer-shaped v2 record batch."""

    def __init__(self, source: str, position: int, reason: str) -> None:
        super().__init__(f"{source}: byte {position}: {reason}")
        self.source = source
        self.position = position
        self.reason = reason


class NotDisklessTopicError(DisklessError, KeyError):
    def __str__(self) -> str:
        return str(self.args[0])


class UnknownDisklessPartitionError(DisklessError, KeyError):
    def __str__(self) -> str:
        return str(self.args[0])


class CommitRejectedError(DisklessError):
    """The coordinator refused a commit and assigned nothing (the object is garbage)."""


class DisklessOffsetOutOfRangeError(DisklessError):
    """Kafka's OffsetOutOfRange for a diskless partition."""

    def __init__(
        self, topic: str, partition: int, offset: int, log_start: int, high_watermark: int
    ) -> None:
        super().__init__(
            f"{topic}-{partition}: offset {offset} is out of range (log start offset "
            f"{log_start}, high watermark {high_watermark})"
        )
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.log_start_offset = log_start
        self.high_watermark = high_watermark
