"""Would the broker keep what a restore writes? Checked against the cluster's metadata.

At start-up a KRaft broker deletes every partition directory its metadata calls stray: a topic
id the cluster does not know, or a partition not assigned to this broker (Kafka 4's
``LogManager`` and ``isStrayReplica``). A restore that wrote one would be undone, silently, the
moment the broker came up. So a restore into a KRaft broker's log dir (``meta.properties`` with
a ``node.id``) asks the cluster first, and:

- restores a topic under the id the cluster has for its name; ``--as-topic`` takes the id of
  the topic created under that name, so create it first (the admin API, kafka-topics.sh);
- refuses, on one line, a topic the cluster does not know, or knows under another id (it was
  deleted and created again: restore it ``--as-topic`` into the new one), and a partition that
  is not this broker's.

The cluster is the live one when TIERFLOW_KAFKA_BOOTSTRAP is set and answers (a broker that
replaces a dead one starts with an empty metadata log, and must be restored into before its
first start), else the broker's own replica of ``__cluster_metadata-0`` in the log dir, as of
its last stop (a single broker, stopped for the restore).

A directory that is no KRaft broker's (a scratch dir, a ZooKeeper broker's) is not checked.
Nor, with a warning, is a KRaft log dir without the metadata log and no bootstrap set (a JBOD
broker's second dir, a generated one): the metadata log is in the first log dir.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from tierflow.kafka.cluster_metadata import (
    ClusterMetadataError,
    read_cluster_partitions,
    read_cluster_topics,
)
from tierflow.kafka.meta_properties import log_dir_properties
from tierflow.kafka.metadata_log import METADATA_PARTITION_DIR, read_metadata_log
from tierflow.restore.errors import RestoreError

log = logging.getLogger(__name__)
PROBE_S = 3  # a stopped single broker is the cluster: its own metadata log answers instead


@dataclass(frozen=True)
class ClusterView:
    """What the cluster knows of the topics a restore writes, and whose log dir it is."""

    source: str  # "the cluster at host:port", "broker 3's metadata log"
    log_dir: Path
    node_id: int
    topic_ids: dict[str, str | None]
    replicas: dict[tuple[str, int], tuple[int, ...]]


def cluster_view(log_dir: Path, names: list[str], bootstrap: str | None) -> ClusterView | None:
    """The cluster as the broker owning ``log_dir`` will see it; None when it is no KRaft
    broker's log dir, or (warned) when nothing can tell."""
    raw = log_dir_properties(log_dir).get("node.id")
    if raw is None:
        return None
    metadata = Path(log_dir) / METADATA_PARTITION_DIR
    if bootstrap:
        try:
            return _live_view(log_dir, int(raw), names, bootstrap)
        except ClusterMetadataError:
            if not metadata.is_dir():
                raise
            log.info("no answer from the cluster at %s: asking %s instead", bootstrap, metadata)
    if not metadata.is_dir():
        log.warning(
            "%s: a KRaft broker's log dir (node.id=%s) without %s and no "
            "TIERFLOW_KAFKA_BOOTSTRAP: whether the broker keeps the restored partitions (and "
            "does not delete them as stray) is not checked",
            *(log_dir, raw, METADATA_PARTITION_DIR),
        )
        return None
    image = read_metadata_log(metadata)
    ids: dict[str, str | None] = {n: t.topic_id for n, t in image.topics.items()}
    replicas = {key: p.replicas for key, p in image.partitions.items()}
    return ClusterView(f"broker {raw}'s metadata log", log_dir, int(raw), ids, replicas)


def _live_view(log_dir: Path, node_id: int, names: list[str], bootstrap: str) -> ClusterView:
    partitions = read_cluster_partitions(bootstrap, names, timeout_s=PROBE_S)
    replicas = {key: p.replicas for key, p in partitions.items()}
    ids = read_cluster_topics(bootstrap, topics=names, timeout_s=PROBE_S)
    return ClusterView(f"the cluster at {bootstrap}", log_dir, node_id, ids, replicas)


def cluster_topic_id(view: ClusterView, name: str, hint: str) -> str | None:
    """The id the cluster has for topic ``name`` (None from a broker too old to send ids);
    RestoreError naming ``hint``, what to do, when it has none: the partitions would be stray."""
    if name not in view.topic_ids:
        raise RestoreError(
            f"{view.log_dir}: topic {name} is not known to {view.source}, so broker "
            f"{view.node_id} would delete its restored partitions as stray; {hint}"
        )
    return view.topic_ids[name]


def check_assigned(view: ClusterView, name: str, partition: int) -> None:
    """The broker must be a replica of the partition, or it deletes it as stray."""
    replicas = view.replicas.get((name, partition))
    if replicas is None:
        raise RestoreError(
            f"{name}-{partition}: {view.source} has no partition {partition} of {name}, so "
            f"broker {view.node_id} would delete it as stray; add partitions first "
            "(kafka-topics.sh --alter --partitions)"
        )
    if view.node_id not in replicas:
        raise RestoreError(
            f"{name}-{partition}: its replicas are brokers {', '.join(map(str, replicas))}, not "
            f"broker {view.node_id} whose log dir {view.log_dir} is, so it would be deleted as "
            "stray; restore into a replica's log dir"
        )
