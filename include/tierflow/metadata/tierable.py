"""Which topics may be tiered: the checks of Kafka's ``UnifiedLog.isRemoteLogEnabled``.

Kafka enables remote storage on a log only when the topic is not internal
(``Topic.isInternal``: a fixed name list), is neither ``__remote_log_metadata`` nor
``__cluster_metadata``, and is not compacted (``LogConfig`` also refuses
``remote.storage.enable`` on a compacted topic). tierflow refuses the same topics but for
the compacted ones, which it tiers (``lifecycle/copy/compacted.py``).
"""

from __future__ import annotations

from tierflow.metadata.errors import MetadataError

# clients/.../common/internals/Topic.java: INTERNAL_TOPICS
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})
# UnifiedLog.isRemoteLogEnabled excludes these two by name as well.
REMOTE_LOG_METADATA_TOPIC = "__remote_log_metadata"
CLUSTER_METADATA_TOPIC = "__cluster_metadata"
NEVER_TIERED = INTERNAL_TOPICS | {REMOTE_LOG_METADATA_TOPIC, CLUSTER_METADATA_TOPIC}


class NotTierableTopicError(MetadataError):
    """A topic never tiered: internal, or a metadata topic."""


def internal_topic_reason(name: str, *, marked_internal: bool = False) -> str | None:
    """Why Kafka never tiers ``name`` for what it is, or None.

    ``marked_internal`` is the cluster's own ``is_internal`` flag (Metadata API), for a
    topic a newer Kafka adds to its internal list.
    """
    if name == CLUSTER_METADATA_TOPIC:
        return "the KRaft metadata log is never tiered"
    if name == REMOTE_LOG_METADATA_TOPIC:
        return "the remote log metadata topic is never tiered"
    if name in INTERNAL_TOPICS or marked_internal:
        return "internal topic: Kafka never tiers internal topics"
    return None


def is_compacted(cleanup_policy: str) -> bool:
    """Kafka's test: the cleanup.policy list contains ``compact`` (compared lower-case)."""
    return "compact" in _policies(cleanup_policy)


def policy_deletes(cleanup_policy: str) -> bool:
    """Kafka's ``LogConfig.delete``: the list holds ``delete``, so retention.ms and
    retention.bytes apply."""
    return "delete" in _policies(cleanup_policy)


def _policies(cleanup_policy: str) -> list[str]:
    return [p.strip().lower() for p in cleanup_policy.split(",")]


def refuse_internal_topic(name: str) -> None:
    """Raise NotTierableTopicError for a name Kafka never tiers."""
    reason = internal_topic_reason(name)
    if reason is not None:
        raise NotTierableTopicError(f"topic {name}: {reason}; it cannot be registered")
