"""``tierflow topics sync``: register every topic Kafka has, with the configs Kafka holds.

Topics come from the broker log dirs (names and ids from ``partition.metadata``, configs from the
KRaft metadata log's ConfigRecords) or from a live cluster (Metadata and DescribeConfigs). A live
cluster describes each config as it applies to the topic, the broker's defaults included, and
that is taken; the metadata log records only a topic's explicit overrides. So each config is
Kafka's value if it states one, else the operator's default (``--config``), else what is
registered now (Kafka's default for a new topic). The tiering switches count only as a topic's
own overrides. A source that says nothing never changes a value: an operator may have enabled
tiering by hand, and a silent source must not start a KIP-950 disablement. An explicit turn-off is
applied but carried as a warning. Topics Kafka never tiers (internal, metadata, compacted) are
reported as skipped, never registered.
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
    parse_kafka_configs,
)
from tierflow.metadata.models import Topic
from tierflow.metadata.tierable import internal_topic_reason
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
# Tiering switches: only a topic's own override says anything (see topics_from_cluster).
_OVERRIDES_ONLY = frozenset(
    {"remote.storage.enable", "remote.log.copy.disable", *_DISABLE_POLICY_KEYS}
)


@dataclass(frozen=True)
class KafkaTopic:
    """One topic as Kafka describes it; ``configs`` are its explicit overrides."""

    name: str
    topic_id: str | None
    configs: Mapping[str, str] = field(default_factory=dict)
    internal: bool = False  # the cluster's is_internal flag, when it was asked
    problem: str | None = None  # why its id cannot be trusted, when the sources disagree


@dataclass(frozen=True)
class SyncOutcome:
    topic: str
    topic_id: str | None
    action: str  # created, updated, unchanged, skipped or failed
    reason: str = ""
    configs: dict[str, str] = field(default_factory=dict)  # what is (or would be) registered
    # Kafka name -> {"old": registered value (None for a new topic), "new": value}
    changes: dict[str, dict[str, str | None]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)  # tiering turned off, said loudly

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
    """The cluster's answer: each config as the broker applies it to the topic (its override,
    else the broker's default, which DescribeConfigs gives too), except the tiering switches,
    which count only as the topic's own overrides (a broker without tiered storage describes
    remote.storage.enable=false for every topic, and that must not disable tierflow's)."""
    return [
        KafkaTopic(
            t.name,
            t.topic_id,
            {**_applied(t.effective), **t.overrides, CLEANUP_POLICY: t.cleanup_policy},
            internal=t.internal,
            problem=None if t.topic_id else "the cluster sent no topic id (Kafka before 2.8)",
        )
        for t in described
    ]


def _applied(effective: Mapping[str, str]) -> dict[str, str]:
    return {
        key: value
        for key, value in effective.items()
        if key not in _OVERRIDES_ONLY and not key.startswith("tierflow.")
    }


def desired_config(
    topic: KafkaTopic, defaults: Mapping[str, str], current: TopicConfig | None = None
) -> TopicConfig:
    """The topic's own override, else the operator's default, else ``current`` (the registered
    config; Kafka's default for a new topic). A key no one states keeps its registered value."""
    own = {k: v for k, v in topic.configs.items() if k in _TIERFLOW_CONFIGS}
    fallback = {k: v for k, v in defaults.items() if k in _TIERFLOW_CONFIGS}
    if any(k in own for k in _DISABLE_POLICY_KEYS):
        for key in _DISABLE_POLICY_KEYS:  # one setting under two names: the topic's wins
            fallback.pop(key, None)
    config = (current or TopicConfig()).with_changes(parse_kafka_configs({**fallback, **own}))
    config.validate()
    return config


def config_changes(old: TopicConfig | None, new: TopicConfig) -> dict[str, dict[str, str | None]]:
    """Kafka name -> old and new value, for each config that differs (all of a new topic's)."""
    before = old.as_kafka_configs() if old is not None else {}
    return {
        key: {"old": before.get(key), "new": value}
        for key, value in new.as_kafka_configs().items()
        if before.get(key) != value
    }


def turn_off_warnings(topic: KafkaTopic, old: TopicConfig, new: TopicConfig) -> list[str]:
    """What turns tiering (or copying) off for a registered topic, and who said so."""
    warnings: list[str] = []
    if old.remote_storage_enable and not new.remote_storage_enable:
        warnings.append(
            f"{topic.name}: remote.storage.enable true -> false "
            f"({_origin(topic, 'remote.storage.enable')}): the topic goes to DISABLING and "
            f"KIP-950 disablement {_disable_effect(new)}"
        )
    if (
        new.remote_storage_enable
        and not old.remote_log_copy_disable
        and new.remote_log_copy_disable
    ):
        warnings.append(
            f"{topic.name}: remote.log.copy.disable false -> true "
            f"({_origin(topic, 'remote.log.copy.disable')}): copying stops, remote data "
            "stays read-only until retention expires it"
        )
    return warnings


def _origin(topic: KafkaTopic, key: str) -> str:
    return "the topic's own config in Kafka" if key in topic.configs else "the --config default"


def _disable_effect(config: TopicConfig) -> str:
    if config.remote_log_disable_policy == "delete":
        return "deletes its remote data (remote.log.delete.on.disable=true)"
    return "keeps its remote data read-only until retention expires it"


def _not_tierable(topic: KafkaTopic, defaults: Mapping[str, str]) -> str | None:
    return internal_topic_reason(topic.name, marked_internal=topic.internal)


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

    A rerun changes only what Kafka (or ``defaults``) states differently: a key neither sets
    keeps its registered value, and each outcome lists its changes (old and new).
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
        if existing is not None and existing.topic_id != topic.topic_id:
            raise MetadataError(
                f"registered with id {existing.topic_id}, Kafka now has {topic.topic_id}: "
                "run 'tierflow delete-topic' for the old one first"
            )
        current = existing.config if existing is not None else None
        config = desired_config(topic, defaults, current)
        changes = config_changes(current, config)
        warnings = [] if current is None else turn_off_warnings(topic, current, config)
        action = CREATED if existing is None else UPDATED if changes else UNCHANGED
        if changes and not dry_run:
            # Only what changed: a concurrent edit of another key is not overwritten.
            fields = {
                k: v
                for k, v in config.as_fields().items()
                if current is None or getattr(current, k) != v
            }
            store.register_topic(topic.name, topic.topic_id, actor=actor, now_ms=now_ms, **fields)
    except (MetadataError, ValueError) as exc:
        return SyncOutcome(topic.name, topic.topic_id, FAILED, str(exc))
    return SyncOutcome(
        topic.name,
        topic.topic_id,
        action,
        configs=config.as_kafka_configs(),
        changes=changes,
        warnings=warnings,
    )
