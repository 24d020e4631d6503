"""A 3-broker KRaft cluster stopped cleanly: its log dirs and the metadata log it leaves.

The brokers' partitions are tests.support.cluster_logs' (the demo generator's data, replication
factor 2, leaders spread over the brokers, some followers lagging). Each broker's log dir gets a
``__cluster_metadata-0`` written with tierflow's metadata log writer, holding what Kafka's
controller records (metadata.version 4.0):

* the brokers registered and unfenced; each topic and its partitions, led by the replica the
  log dirs show leading, the ISR both replicas or, for a lagging follower, the leader alone;
* then each broker's controlled shutdown in turn, brokers 1, 2, 3
  (``ReplicationControlManager.handleBrokerInControlledShutdown``, then ``handleBrokerFenced``):
  InControlledShutdown, one PartitionChangeRecord per partition whose ISR holds the broker
  (``PartitionChangeBuilder``: it leaves the ISR, its leadership moves to another active ISR
  member or, with none, to -1), and the broker fenced.

Without KIP-966 (``elr=False``) the last ISR member stays in the ISR of a partition left with
leader -1; with it (eligible.leader.replicas.version=1, min.insync.replicas 1) the ISR empties,
the replicas that were in it become the ELR and the last leader is the LastKnownElr. Either way
every partition ends without a leader and ``last_leaders`` says whom Kafka would elect first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from tests.support.cluster_logs import ClusterLogs, build_cluster
from tierflow.kafka.leader_epoch import LEADER_EPOCH_CHECKPOINT, read_leader_epoch_checkpoint
from tierflow.kafka.metadata_log import METADATA_PARTITION_DIR
from tierflow.kafka.metadata_log import records as r
from tierflow.kafka.metadata_log.writer import (
    LeaderAndIsr,
    MetadataLogWriter,
    Writable,
    broker_change_record,
    metadata_version_record,
    partition_change,
    partition_record,
    register_broker_record,
    topic_config_record,
    topic_record,
)

MIN_ISR = 1  # Kafka's default min.insync.replicas
TOPICS = ("orders", "clicks")
PARTITIONS = 6  # per topic: every (preferred leader, follower) pair of 3 brokers, lagging or not


@dataclass
class _Partition:
    """The controller's PartitionRegistration, as far as a shutdown changes it."""

    replicas: tuple[int, ...]
    leader: int
    isr: list[int]
    elr: list[int] = field(default_factory=list)
    last_known_elr: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class StoppedCluster:
    logs: ClusterLogs
    elr: bool  # KIP-966 on
    last_leaders: dict[tuple[str, int], int]  # whom a clean election would take first
    stopped: tuple[int, ...]  # the brokers shut down, in order


def stopped_cluster(
    base: Path, *, elr: bool, stop: tuple[int, ...] = (1, 2, 3), partitions: int = PARTITIONS
) -> StoppedCluster:
    """The cluster with ``stop`` shut down, in that order (all three: the whole cluster)."""
    logs = build_cluster(base, topics=TOPICS, partitions=partitions, brokers=3)
    state = {(name, p): _created(logs, p) for name in logs.topics for p in range(partitions)}
    batches = [*_registrations(logs), *_topics(logs, state)]
    batches += _shutdowns(logs, state, stop, elr=elr)
    for log_dir in logs.log_dirs.values():
        writer = MetadataLogWriter(log_dir / METADATA_PARTITION_DIR)
        writer.transaction(_features(elr), name="Bootstrap records")
        for batch in batches:
            writer.append(*batch)
    last = {key: _first_electable(p) for key, p in state.items() if p.leader == r.NO_LEADER}
    return StoppedCluster(logs, elr, last, stop)


def _created(logs: ClusterLogs, partition: int) -> _Partition:
    replicas = logs.replicas(partition)
    leader = logs.leader_of(partition)
    isr = [leader] if logs.lagging(partition) else list(replicas)
    return _Partition(replicas, leader, isr)


def _features(elr: bool) -> list[Writable]:
    found: list[Writable] = [metadata_version_record()]
    if elr:
        name = "eligible.leader.replicas.version"
        found.append(r.FeatureLevelRecord(version=0, name=name, feature_level=1))
    return found


def _registrations(logs: ClusterLogs) -> list[list[Writable]]:
    """Each broker registered (fenced), then unfenced; its epoch is its id."""
    return [
        [register_broker_record(b, b), broker_change_record(b, b, fenced=False)]
        for b in logs.brokers
    ]


def _topics(logs: ClusterLogs, state: dict[tuple[str, int], _Partition]) -> list[list[Writable]]:
    """Per topic: TopicRecord, its remote.storage.enable, its PartitionRecords."""
    epoch = _leader_epoch(logs)
    batches: list[list[Writable]] = []
    for name, topic_id in logs.topics.items():
        batch: list[Writable] = [
            topic_record(name, topic_id),
            topic_config_record(name, "remote.storage.enable", "true"),
        ]
        for (topic, p), s in state.items():
            if topic == name:
                batch.append(
                    partition_record(topic_id, p, s.replicas, LeaderAndIsr(s.leader, epoch, s.isr))
                )
        batches.append(batch)
    return batches


def _leader_epoch(logs: ClusterLogs) -> int:
    """The leaders' newest epoch, as the controller last gave it them."""
    leader = logs.leader_log(next(iter(logs.topics)), 0)
    return read_leader_epoch_checkpoint(leader.path / LEADER_EPOCH_CHECKPOINT)[-1].epoch


def _shutdowns(
    logs: ClusterLogs,
    state: dict[tuple[str, int], _Partition],
    stop: tuple[int, ...],
    *,
    elr: bool,
) -> list[list[Writable]]:
    """Per broker stopped: InControlledShutdown and the PartitionChangeRecords it causes, then
    the broker fenced (its ISRs already left, handleBrokerFenced changes no partition)."""
    batches: list[list[Writable]] = []
    active = set(logs.brokers)
    for broker in stop:
        active.discard(broker)
        batch: list[Writable] = [broker_change_record(broker, broker, in_controlled_shutdown=True)]
        for (name, p), partition in state.items():
            change = _leave(partition, broker, active, elr=elr)
            if change is not None:
                batch.append(partition_change(logs.topics[name], p, **change))
        batches += [batch, [broker_change_record(broker, broker, fenced=True)]]
    return batches


def _leave(p: _Partition, broker: int, active: set[int], *, elr: bool) -> dict | None:
    """PartitionChangeBuilder.build for ``broker`` leaving the ISR (its leadership too): the
    changed fields, or None when the broker is in no ISR of it."""
    if broker not in p.isr:
        return None
    target = [b for b in p.isr if b != broker]
    change: dict = {}
    if elr:  # maybePopulateTargetElr (the last known ELR holds only the last leader)
        new_elr = [] if len(target) >= MIN_ISR else sorted((set(p.elr) | set(p.isr)) - set(target))
        if new_elr != p.elr:
            change["elr"] = p.elr = new_elr
    valid = [b for b in p.replicas if b in active and (b in target or (not target and b in p.elr))]
    leader = p.leader if p.leader in valid else (valid[0] if valid else r.NO_LEADER)
    if leader != p.leader:
        change["leader"] = leader
    if target or elr:  # without KIP-966 Kafka never empties the ISR
        change["isr"] = target
    if elr and not target and p.last_known_elr != [p.leader]:
        change["last_known_elr"] = p.last_known_elr = [p.leader]  # maybeUpdateLastKnownLeader
    if "isr" in change:
        p.isr = target
    p.leader = leader
    return change


def _first_electable(p: _Partition) -> int:
    """PartitionChangeBuilder.electAnyLeader once every broker is back: the first replica in
    the ISR, else in the ELR, else the last known leader."""
    for named in (p.isr, p.elr, p.last_known_elr):
        if named:
            return next(b for b in p.replicas if b in named)
    raise AssertionError(f"the metadata names no replica of {p}")
