"""Replicas of one partition on several brokers, written as a broker writes them.

Each replica is appended batch by batch through the demo broker's append path
(``tierflow.demo.partition_log``), so its segments, offset indexes and leader-epoch-checkpoint
come from the batches' own leader epochs, as on a real broker. Each batch holds 3 records.
"""

from __future__ import annotations

from pathlib import Path

from tests.unit.kafka.log_builders import v2_batch
from tierflow.config import BrokerSpec, Settings
from tierflow.demo.partition_log import PartitionLayout, PartitionLogWriter
from tierflow.kafka.checkpoint import REPLICATION_OFFSET_CHECKPOINT, write_offset_checkpoint

RECORDS_PER_BATCH = 3
SEGMENT_BYTES = 16 * 1024
INDEX_INTERVAL_BYTES = 2048


def write_replica(
    log_dir: Path, topic: str, partition: int, epochs: list[tuple[int, int]]
) -> PartitionLayout:
    """``epochs``: (leader epoch, batches written in it), in log order."""
    writer = PartitionLogWriter(
        log_dir / f"{topic}-{partition}",
        log_start_offset=0,
        segment_bytes=SEGMENT_BYTES,
        index_interval_bytes=INDEX_INTERVAL_BYTES,
        preallocated_index_bytes=8192,
    )
    for epoch, batches in epochs:
        for _ in range(batches):
            writer.append(v2_batch(writer.next_offset, RECORDS_PER_BATCH, leader_epoch=epoch))
    return writer.close()


def write_broker_root(
    log_dir: Path, node_id: int | None, high_watermarks: dict[tuple[str, int], int]
) -> None:
    """The root files: meta.properties (KRaft, version 1) and replication-offset-checkpoint."""
    log_dir.mkdir(parents=True, exist_ok=True)
    if node_id is not None:
        lines = ["#", "#Tue Nov 24 12:00:00 UTC 2026", f"node.id={node_id}", "version=1"]
        (log_dir / "meta.properties").write_text("\n".join(lines) + "\n", encoding="utf-8")
    write_offset_checkpoint(log_dir / REPLICATION_OFFSET_CHECKPOINT, high_watermarks)


def cluster_settings(base: Path, dirs: dict[int, Path], **overrides: object) -> Settings:
    """Settings for brokers ``{id: log dir}``, as TIERFLOW_BROKERS would give them."""
    brokers = tuple(BrokerSpec(b, (path.resolve(),)) for b, path in sorted(dirs.items()))
    every = tuple(path for broker in brokers for path in broker.log_dirs)
    return Settings.embedded(base, brokers=brokers, log_dirs=every, **overrides)


def offsets(batches: int) -> int:
    return batches * RECORDS_PER_BATCH
