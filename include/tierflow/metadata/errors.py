"""Errors of the metadata store; each message names the entity and what is wrong with it."""

from __future__ import annotations


class MetadataError(Exception):
    """Base class, so callers can catch every store error in one place."""


class InvalidStateTransition(MetadataError):
    """A transition Kafka's state machine forbids (Kafka logs and drops these; we refuse)."""

    def __init__(self, entity: str, entity_id: str, src: str | None, dst: str) -> None:
        self.entity = entity
        self.entity_id = entity_id
        self.src = src
        self.dst = dst
        super().__init__(f"{entity} {entity_id}: invalid state transition {src} -> {dst}")


class _NotFound(MetadataError, KeyError):
    """A KeyError whose str() is the plain message rather than its repr."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class UnknownTopicError(_NotFound):
    pass


class UnknownPartitionError(_NotFound):
    pass


class UnknownSegmentError(_NotFound):
    pass


class TopicConflictError(MetadataError):
    """A topic name registered again with another topic id: Kafka would call it a new topic."""


class InvalidConfigError(MetadataError, ValueError):
    """A topic config Kafka's LogConfig would reject; ``config`` is the Kafka config name."""

    def __init__(self, config: str, message: str) -> None:
        self.config = config
        super().__init__(message)


class TieredStorageDisablementInProgressError(MetadataError):
    """Kafka's TIERED_STORAGE_DISABLEMENT_IN_PROGRESS: the topic is still DISABLING."""

    error_code = "TIERED_STORAGE_DISABLEMENT_IN_PROGRESS"

    def __init__(self, topic: str) -> None:
        self.topic = topic
        super().__init__(
            f"{self.error_code}: tiered storage disablement of topic {topic} is in progress; "
            "retry once it is DISABLED"
        )


class LeaseLostError(MetadataError):
    """A write fenced by a partition lease that its holder no longer has: another attempt under
    the same owner (a cleared or later run) took the lease over, or another owner took it after
    it expired. Nothing was written."""
