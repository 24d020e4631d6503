"""``tierflow topics sync``: register every topic Kafka has, with the configs Kafka holds.

Topics come from the broker log dirs (names and ids from ``partition.metadata``, configs from the
KRaft metadata log's ConfigRecords) or from a live cluster (Metadata and DescribeConfigs). Kafka
records only a topic's explicit overrides, so each config is the override if there is one, else
the operator's default (``--config``), else Kafka's default. Topics Kafka never tiers (internal,
metadata, compacted) are reported as skipped, never registered.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tierflow.kafka.log_dir import LogDir
from tierflow.metadata.errors import MetadataError
from tierflow.metadata.log_config import (
    CLEANUP_POLICY,
    DELETE_ON_DISABLE,
    KAFKA_NAMES,
    TopicConfig,
)
from tierflow.metadata.models import Topic
from tierflow.metadata.tierable import internal_topic_reason, is_compacted
from tierflow.metadata.topic_registry import TopicRegistry

if TYPE_CHECKING:  # types only: the admin client and the metadata log load on use
    from tierflow.kafka.cluster_metadata import TopicConfigs
    from tierflow.kafka.metadata_log import MetadataImage

CREATED, UPDATED, UNCHANGED, SKIPPED, FAILED = (
    "created",
    "updated",
    "unchanged",
    "skipped",
    "failed",
)
_TIERFLOW_CONFIGS = frozenset({*KAFKA_NAMES, DELETE_ON_DISABLE})
# KIP-950's remote.log.disable.policy and 3.9's boolean that replaced it.
_DISABLE_POLICY_KEYS = ("remote.log.disable.policy", DELETE_ON_DISABLE)


@dataclass(frozen=True)
class KafkaTopic:
    """One topic as Kafka describes it; ``configs`` are its explicit overrides."""

    name: str
    topic_id: str | None
    configs: Mapping[str, str] = field(default_factory=dict)
    internal: bool = False  # the cluster's is_internal flag, when it was asked
    problem: str | None = None  # why its id cannot be trusted, when the sources disagree

    def cleanup_policy(self, defaults: Mapping[str, str]) -> str:
        return self.configs.get(CLEANUP_POLICY) or defaults.get(CLEANUP_POLICY) or "delete"


@dataclass(frozen=True)
class SyncOutcome:
    topic: str
    topic_id: str | None
    action: str  # created, updated, unchanged, skipped or failed
    reason: str = ""
    configs: dict[str, str] = field(default_factory=dict)  # what is (or would be) registered

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def topics_from_log_dirs(log_dirs: Sequence[Path], image: MetadataImage | None) -> list[KafkaTopic]:
    """Topics with a partition in any of ``log_dirs``; ids from partition.metadata.

    A topic's partitions may sit in several dirs (JBOD, or several brokers' dirs), so ids are
    gathered per name. With a metadata image, its id and configs are Kafka's word; dirs that
    disagree with it hold a stale incarnation of the name.
    """
    ids: dict[str, set[str | None]] = {}
    for path in log_dirs:
        for log_ in LogDir(path).partitions():
            ids.setdefault(log_.topic, set()).add(log_.topic_id())
    return [_log_dir_topic(name, ids[name], image) for name in sorted(ids)]


def _log_dir_topic(name: str, seen: set[str | None], image: MetadataImage | None) -> KafkaTopic:
    known = {i for i in seen if i is not None}
    configs = dict(image.configs.get(name, {})) if image else {}
    in_image = image.topics.get(name) if image else None
    if in_image is not None:
        stale = known - {in_image.topic_id}
        problem = (
            f"log dirs hold topic id(s) {', '.join(sorted(stale))} but the metadata log says "
            f"{in_image.topic_id}: a stale replica of a deleted topic"
            if stale
            else None
        )
        return KafkaTopic(name, in_image.topic_id, configs, problem=problem)
    if len(known) > 1:
        problem = f"partition.metadata files disagree on its id: {', '.join(sorted(known))}"
        return KafkaTopic(name, None, configs, problem=problem)
    topic_id = next(iter(known), None)
    problem = (
        None
        if topic_id
        else "no partition.metadata (Kafka before 2.8): use topics register --topic-id"
    )
    return KafkaTopic(name, topic_id, configs, problem=problem)


def topics_from_cluster(described: Iterable[TopicConfigs]) -> list[KafkaTopic]:
    """The cluster's answer; its effective cleanup.policy stands in for the override."""
    return [
        KafkaTopic(
            t.name,
            t.topic_id,
            {**t.overrides, CLEANUP_POLICY: t.cleanup_policy},
            internal=t.internal,
            problem=None if t.topic_id else "the cluster sent no topic id (Kafka before 2.8)",
        )
        for t in described
    ]


def desired_config(topic: KafkaTopic, defaults: Mapping[str, str]) -> TopicConfig:
    """Kafka's default, overridden by the operator's default, overridden by the topic's own."""
    own = {k: v for k, v in topic.configs.items() if k in _TIERFLOW_CONFIGS}
    fallback = {k: v for k, v in defaults.items() if k in _TIERFLOW_CONFIGS}
    if any(k in own for k in _DISABLE_POLICY_KEYS):
        for key in _DISABLE_POLICY_KEYS:  # one setting under two names: the topic's wins
            fallback.pop(key, None)
    return TopicConfig.from_kafka_configs({**fallback, **own})


def _not_tierable(topic: KafkaTopic, defaults: Mapping[str, str]) -> str | None:
    reason = internal_topic_reason(topic.name, marked_internal=topic.internal)
    if reason is not None:
        return reason
    policy = topic.cleanup_policy(defaults)
    if is_compacted(policy):
        return f"cleanup.policy={policy}: Kafka never tiers compacted topics"
    return None


def sync_topics(
    store: TopicRegistry,
    topics: Iterable[KafkaTopic],
    *,
    defaults: Mapping[str, str],
    actor: str,
    now_ms: int,
    dry_run: bool = False,
) -> list[SyncOutcome]:
    """Register or update each topic; one outcome per topic, failures included, never raised.

    A rerun changes only what Kafka (or ``defaults``) changed: equal configs are left alone.
    """
    registered = {t.name: t for t in store.topics()}
    return [
        _sync_one(store, topic, registered.get(topic.name), defaults, actor, now_ms, dry_run)
        for topic in topics
    ]


def _sync_one(
    store: TopicRegistry,
    topic: KafkaTopic,
    existing: Topic | None,
    defaults: Mapping[str, str],
    actor: str,
    now_ms: int,
    dry_run: bool,
) -> SyncOutcome:
    skipped = _not_tierable(topic, defaults)
    if skipped is not None:
        return SyncOutcome(topic.name, topic.topic_id, SKIPPED, skipped)
    if topic.problem is not None or topic.topic_id is None:
        return SyncOutcome(topic.name, topic.topic_id, FAILED, topic.problem or "no topic id")
    try:
        config = desired_config(topic, defaults)
        if existing is not None and existing.topic_id != topic.topic_id:
            raise MetadataError(
                f"registered with id {existing.topic_id}, Kafka now has {topic.topic_id}: "
                "run 'tierflow delete-topic' for the old one first"
            )
        action = CREATED if existing is None else UPDATED
        if existing is not None and existing.config == config:
            action = UNCHANGED
        elif not dry_run:
            store.register_topic(
                topic.name, topic.topic_id, actor=actor, now_ms=now_ms, **config.as_fields()
            )
    except (MetadataError, ValueError) as exc:
        return SyncOutcome(topic.name, topic.topic_id, FAILED, str(exc))
    return SyncOutcome(topic.name, topic.topic_id, action, configs=config.as_kafka_configs())
