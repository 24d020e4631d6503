"""Topic names and ids from a live Kafka cluster, through kafka-python's admin client.

Deleted-topic detection compares these with the metadata store, so a failure must never look
like an answer: every error raises ``ClusterMetadataError`` (an empty dict would read as "every
topic was deleted"). Ids are in Kafka's 22-character form, as in ``partition.metadata``.

A client only sees the topics its principal may DESCRIBE; a full listing silently leaves the
others out. Pass ``topics`` (the registered names) to ask for them by name instead: the broker
then answers each one with the topic, UNKNOWN_TOPIC_OR_PARTITION (gone), or
TOPIC_AUTHORIZATION_FAILED, which raises here rather than passing for a deletion.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import kafka.errors as kafka_errors
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient
from kafka.net.compat import KafkaNetClient

from tierflow.kafka.errors import ClusterMetadataError
from tierflow.kafka.uuid import ZERO_UUID, to_kafka_uuid

__all__ = [
    "ClusterMetadataError",
    "PartitionMetadata",
    "TopicConfigs",
    "read_cluster_partitions",
    "read_cluster_topic_configs",
    "read_cluster_topics",
    "set_topic_configs",
]

CLIENT_ID = "tierflow"
RETRY_S = 0.25
_T = TypeVar("_T")
_UNKNOWN_TOPIC = kafka_errors.UnknownTopicOrPartitionError.errno
_NOT_AUTHORIZED = kafka_errors.TopicAuthorizationFailedError.errno


def read_cluster_topics(
    bootstrap: str,
    *,
    timeout_s: float = 10,
    topics: Collection[str] | None = None,
    client_config: Mapping[str, Any] | None = None,
) -> dict[str, str | None]:
    """Topic name -> topic id (None when the broker is too old to send ids, before 2.8).

    ``topics=None`` lists every topic the client may see; with names, only those are asked
    for and the absent ones are left out of the answer. ``client_config`` passes further
    ``KafkaAdminClient`` settings (``security_protocol``, ``sasl_*``, ``ssl_*``).
    """
    names = None if topics is None else sorted(set(topics))
    described = _ask(bootstrap, timeout_s, client_config, lambda a: a.describe_topics(names))
    return _topic_ids(bootstrap, described)


@dataclass(frozen=True)
class PartitionMetadata:
    """One partition as the Metadata API answers it: leader -1 means it has none now.

    ``leader_epoch`` is None from brokers older than Metadata v7 (Kafka 2.1), which omit it.
    """

    topic: str
    partition: int
    leader: int
    leader_epoch: int | None
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


def read_cluster_partitions(
    bootstrap: str,
    topics: Collection[str],
    *,
    timeout_s: float = 10,
    client_config: Mapping[str, Any] | None = None,
) -> dict[tuple[str, int], PartitionMetadata]:
    """The leader, replicas and ISR of every partition of ``topics`` the cluster knows.

    Topics the cluster does not know are left out; an unauthorized one raises, as in
    :func:`read_cluster_topics`.
    """
    if not topics:
        return {}
    names = sorted(set(topics))
    described = _ask(bootstrap, timeout_s, client_config, lambda a: a.describe_topics(names))
    known = _topic_ids(bootstrap, described)
    return {
        (topic["name"], p["partition_index"]): PartitionMetadata(
            topic=topic["name"],
            partition=p["partition_index"],
            leader=p["leader_id"],
            leader_epoch=p["leader_epoch"] if p.get("leader_epoch", -1) >= 0 else None,
            replicas=tuple(p.get("replica_nodes") or ()),
            isr=tuple(p.get("isr_nodes") or ()),
        )
        for topic in described
        if topic["name"] in known
        for p in topic.get("partitions") or ()
    }


def _ask(
    bootstrap: str,
    timeout_s: float,
    client_config: Mapping[str, Any] | None,
    question: Callable[[KafkaAdminClient], _T],
) -> _T:
    """``question`` asked of the cluster within ``timeout_s``; ClusterMetadataError if not.

    A broker whose JVM just died stays in the metadata the others send until the controller
    fences it (seconds); a client that picks it gets a refused connection. That, and any other
    error Kafka calls retriable, is asked again on a new client until the time is up, so one
    broker down never reads as an unreadable cluster.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        timeout_ms = max(1, int((deadline - time.monotonic()) * 1000))
        try:
            with _admin_client(bootstrap, timeout_ms, client_config or {}) as admin:
                return question(admin)
        except (kafka_errors.KafkaError, OSError, ValueError) as exc:
            again = isinstance(exc, OSError) or getattr(exc, "retriable", False)
            timed_out = isinstance(exc, kafka_errors.KafkaTimeoutError)
            if not again or timed_out or time.monotonic() + RETRY_S >= deadline:
                raise ClusterMetadataError(bootstrap, _describe_error(exc, timeout_s)) from exc
        time.sleep(RETRY_S)


@contextmanager
def _admin_client(
    bootstrap: str, timeout_ms: int, client_config: Mapping[str, Any]
) -> Iterator[KafkaAdminClient]:
    """A connected admin client, always closed, also when connecting fails.

    ``KafkaAdminClient`` starts its IO thread before it bootstraps and, when bootstrapping
    fails, raises without stopping it; the factory below keeps hold of the network client so
    that thread and its sockets are stopped here.
    """
    created: list[KafkaNetClient] = []
    try:
        admin = KafkaAdminClient(
            **{
                **client_config,
                "bootstrap_servers": bootstrap,
                "client_id": client_config.get("client_id", CLIENT_ID),
                "bootstrap_timeout_ms": timeout_ms,
                "request_timeout_ms": timeout_ms,
                "kafka_client": _recording(created),
            }
        )
    except BaseException:
        for client in created:
            client.close()
            client._net.stop()
        raise
    try:
        yield admin
    finally:
        admin.close()


def _recording(created: list[KafkaNetClient]) -> Callable[..., KafkaNetClient]:
    def make(**configs: Any) -> KafkaNetClient:
        client = KafkaNetClient(**configs)
        created.append(client)
        return client

    return make


def _topic_ids(bootstrap: str, described: list[dict[str, Any]]) -> dict[str, str | None]:
    """The answer per topic: unknown ones left out, unauthorized ones raise.

    Any other per-topic error (no leader, say) still means the topic exists.
    """
    found: dict[str, str | None] = {}
    for topic in described:
        code = topic.get("error_code", 0)
        if code == _UNKNOWN_TOPIC:
            continue
        if code == _NOT_AUTHORIZED:
            raise ClusterMetadataError(
                bootstrap, f"not authorized to describe topic {topic['name']!r}"
            )
        found[topic["name"]] = _kafka_topic_id(topic.get("topic_id"))
    return found


def _kafka_topic_id(value: uuid.UUID | str | None) -> str | None:
    """kafka-python's UUID (or its text) -> Kafka's form; the zero id means "no id"."""
    if value is None:
        return None
    text = to_kafka_uuid(value if isinstance(value, uuid.UUID) else uuid.UUID(str(value)))
    return None if text == ZERO_UUID else text


def _describe_error(exc: BaseException, timeout_s: float) -> str:
    if isinstance(exc, kafka_errors.KafkaTimeoutError):
        return f"no answer within {timeout_s:g} s ({exc})"
    return f"{type(exc).__name__}: {exc}"


@dataclass(frozen=True)
class TopicConfigs:
    """A topic as ``tierflow topics sync`` needs it from a live cluster."""

    name: str
    topic_id: str | None
    internal: bool  # the broker's is_internal flag (Topic.isInternal)
    overrides: dict[str, str]  # the topic's own configs (source DYNAMIC_TOPIC_CONFIG)
    cleanup_policy: str  # the effective value, whatever its source (broker defaults too)
    # Every config's effective value, whatever its source: the override, else the broker's
    # static or dynamic default, else Kafka's own default (what the broker applies).
    effective: dict[str, str] = field(default_factory=dict)


def read_cluster_topic_configs(
    bootstrap: str, *, timeout_s: float = 10, client_config: Mapping[str, Any] | None = None
) -> list[TopicConfigs]:
    """Every topic the client may describe, with its config overrides (DescribeConfigs).

    All configs are asked for and the topic's own are kept here: a broker describes every
    config of a topic it answers for, so an empty answer is an error (say, no DESCRIBE_CONFIGS
    permission), which kafka-python does not report per resource. It raises, as every failure
    here does, rather than pass for "no overrides".
    """

    def question(admin: KafkaAdminClient) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        described = admin.describe_topics(None)
        names = sorted(_topic_ids(bootstrap, described))
        resources = [ConfigResource(ConfigResourceType.TOPIC, name) for name in names]
        return described, admin.describe_configs(resources, config_filter="all") if names else {}

    described, configs = _ask(bootstrap, timeout_s, client_config, question)
    ids = _topic_ids(bootstrap, described)
    names = sorted(ids)
    internal = {t["name"] for t in described if t.get("is_internal")}
    by_topic = configs.get("topic", {})
    found = []
    for name in names:
        entries = by_topic.get(name) or {}
        if not entries:
            raise ClusterMetadataError(bootstrap, f"no configs described for topic {name!r}")
        overrides = {
            key: entry["value"]
            for key, entry in entries.items()
            if entry.get("config_source") == "DYNAMIC_TOPIC_CONFIG" and entry["value"] is not None
        }
        effective = {k: e["value"] for k, e in entries.items() if e["value"] is not None}
        policy = effective.get("cleanup.policy") or "delete"
        found.append(TopicConfigs(name, ids[name], name in internal, overrides, policy, effective))
    return found


def set_topic_configs(
    bootstrap: str,
    topic: str,
    configs: Mapping[str, str],
    *,
    timeout_s: float = 30,
    client_config: Mapping[str, Any] | None = None,
) -> None:
    """Set ``configs`` on the topic with IncrementalAlterConfigs: its other overrides stay as
    they are (a plain AlterConfigs would reset them). ClusterMetadataError if refused."""

    def question(admin: KafkaAdminClient) -> Any:
        resource = ConfigResource(ConfigResourceType.TOPIC, topic, dict(configs))
        return admin.alter_configs([resource], incremental=True, raise_on_unknown=False)

    answer = _ask(bootstrap, timeout_s, client_config, question)
    result = (answer or {}).get("topic", {}).get(topic)  # "OK", or the error as text
    if result != "OK":
        raise ClusterMetadataError(bootstrap, f"topic {topic}: configs refused: {result}")
