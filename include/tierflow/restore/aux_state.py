"""Replica rebuild, as Kafka's follower does it (``buildRemoteLogAuxState``): a partition whose
local log starts at offset N gets only what lets a broker start there, from remote storage: the
producer snapshot at N and the leader-epoch entries before N, both as the leader uploaded them
with the segment that ends at N. No log data is read.

N must be where a remote segment ends (its end offset + 1), as it is on a follower that fetches
from the leader's local log start; the snapshot uploaded with that segment is the state at N.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from tierflow.kafka.leader_epoch import LEADER_EPOCH_CHECKPOINT, read_leader_epoch_checkpoint
from tierflow.kafka.log_dir import PartitionLog
from tierflow.kafka.naming import SNAPSHOT_SUFFIX, offset_prefix
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.metadata.store import MetadataStore
from tierflow.restore.plan import RestoreError, find_topic
from tierflow.restore.segment_files import write_file
from tierflow.rsm import IndexType, RemoteStorageManager
from tierflow.segment_refs import remote_segment


@dataclass(frozen=True)
class AuxStateReport:
    partition: str
    local_start_offset: int
    producer_snapshot: str
    leader_epochs: int

    def as_dict(self) -> dict:
        return asdict(self)


def restore_aux_state(
    store: MetadataStore, rsm: RemoteStorageManager, log_: PartitionLog
) -> AuxStateReport:
    """Write ``<N>.snapshot`` and ``leader-epoch-checkpoint`` into the partition directory."""
    segments = log_.segments()
    if not segments:
        raise RestoreError(f"{log_.path}: no local segment to start from")
    start = segments[0].base_offset
    topic = find_topic(store, log_.topic)
    rows = store.segments(topic.topic_id, log_.partition, states=[S.COPY_SEGMENT_FINISHED])
    below = sorted((r for r in rows if r.end_offset < start), key=lambda r: r.start_offset)
    if not below or below[-1].end_offset + 1 != start:
        raise RestoreError(
            f"{log_.path}: no remote segment ends at offset {start - 1}, where the local log "
            "starts; a replica rebuilds its auxiliary state only at a remote segment's end"
        )
    segment = remote_segment(topic, below[-1])
    path = log_.path / (offset_prefix(start) + SNAPSHOT_SUFFIX)
    write_file(path, [rsm.fetch_index(segment, IndexType.PRODUCER_SNAPSHOT)])
    # The leader's cache as it was uploaded with the segment: its entries before N.
    checkpoint = log_.path / LEADER_EPOCH_CHECKPOINT
    write_file(checkpoint, [rsm.fetch_index(segment, IndexType.LEADER_EPOCH)])
    epochs = read_leader_epoch_checkpoint(checkpoint)
    return AuxStateReport(f"{log_.topic}-{log_.partition}", start, path.name, len(epochs))
