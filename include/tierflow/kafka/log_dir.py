"""A broker log directory (``log.dirs`` entry): partition directories plus root checkpoints."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from tierflow.kafka.checkpoint import (
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_OFFSET_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    read_offset_checkpoint,
)
from tierflow.kafka.errors import MissingFileError, UnknownPartitionError
from tierflow.kafka.leader_epoch import (
    LEADER_EPOCH_CHECKPOINT,
    EpochEntry,
    read_leader_epoch_checkpoint,
)
from tierflow.kafka.naming import LOG_SUFFIX, SNAPSHOT_SUFFIX, offset_prefix, parse_partition_dir
from tierflow.kafka.partition_metadata import PARTITION_METADATA, read_partition_metadata
from tierflow.kafka.segment import LogSegment

METADATA_TOPIC = "__cluster_metadata"  # Kafka's KafkaRaftServer.MetadataTopic


@dataclass
class PartitionLog:
    topic: str
    partition: int
    path: Path
    log_dir: LogDir = field(repr=False)

    @property
    def key(self) -> tuple[str, int]:
        return self.topic, self.partition

    def topic_id(self) -> str | None:
        """From partition.metadata; None for brokers older than 2.8 that do not write it."""
        path = self.path / PARTITION_METADATA
        return read_partition_metadata(path) if path.is_file() else None

    def segments(self) -> list[LogSegment]:
        """Segments by ascending base offset; ``.log.deleted``/``.cleaned``/``.swap`` ignored."""
        segments = [
            LogSegment.from_log_path(p)
            for p in self.path.glob(f"*{LOG_SUFFIX}")
            if len(p.name) == 20 + len(LOG_SUFFIX) and p.name[:20].isdigit()
        ]
        return sorted(segments, key=lambda s: s.base_offset)

    def leader_epoch_entries(self) -> list[EpochEntry]:
        path = self.path / LEADER_EPOCH_CHECKPOINT
        return read_leader_epoch_checkpoint(path) if path.is_file() else []

    def producer_snapshot_path(self, offset: int) -> Path:
        return self.path / f"{offset_prefix(offset)}{SNAPSHOT_SUFFIX}"

    def snapshot_offsets(self) -> list[int]:
        """Offsets of the producer snapshots present, ascending."""
        return sorted(
            int(p.name[:20])
            for p in self.path.glob(f"*{SNAPSHOT_SUFFIX}")
            if len(p.name) == 20 + len(SNAPSHOT_SUFFIX) and p.name[:20].isdigit()
        )

    def high_watermark(self) -> int | None:
        """From the root replication-offset-checkpoint; None if it has no entry for us.

        The value as written. A broker loading the log clamps it into [log start, log end]
        (``UnifiedLog.updateHighWatermark``): after an unclean shutdown the checkpoint can name
        offsets the recovered log no longer has. Copy bounds by existing segments are the same
        either way, so this read stays free of segment reads.
        """
        return self.log_dir.checkpoint(REPLICATION_OFFSET_CHECKPOINT).get(self.key)

    def recovery_point(self) -> int | None:
        return self.log_dir.checkpoint(RECOVERY_POINT_OFFSET_CHECKPOINT).get(self.key)

    def log_start_offset(self, segments: list[LogSegment] | None = None) -> int:
        """Kafka only checkpoints a log start above the first segment's base, hence the
        fallback. ``segments`` (here and below): the listing the caller already made, rather
        than another one per question."""
        checkpointed = self.log_dir.checkpoint(LOG_START_OFFSET_CHECKPOINT).get(self.key)
        if checkpointed is not None:
            return checkpointed
        segments = self.segments() if segments is None else segments
        return segments[0].base_offset if segments else 0

    def log_end_offset(self, segments: list[LogSegment] | None = None) -> int:
        """Next offset to be written: after the active segment's last batch, else its base."""
        segments = self.segments() if segments is None else segments
        if not segments:
            return self.log_start_offset(segments)
        last = segments[-1].last_offset()
        return segments[-1].base_offset if last is None else last + 1


class LogDir:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if not self.path.is_dir():
            raise MissingFileError(self.path, None, "log directory does not exist")

    def __repr__(self) -> str:
        return f"LogDir({str(self.path)!r})"

    def checkpoint(self, name: str) -> dict[tuple[str, int], int]:
        """A root offset checkpoint by file name; {} when the broker has not written it yet."""
        path = self.path / name
        return read_offset_checkpoint(path) if path.is_file() else {}

    def partitions(self) -> list[PartitionLog]:
        """The partition logs a broker's LogManager loads.

        Like Kafka's ``LogManager.loadLogs``, this leaves out ``__cluster_metadata-0``: the KRaft
        metadata log belongs to the Raft client, is in none of the root checkpoints and is read
        with ``tierflow.kafka.metadata_log`` instead.
        """
        found = []
        for child in self.path.iterdir():
            parsed = parse_partition_dir(child.name)
            if parsed is not None and parsed[0] != METADATA_TOPIC and child.is_dir():
                found.append(PartitionLog(parsed[0], parsed[1], child, self))
        return sorted(found, key=lambda p: p.key)

    def partition(self, topic: str, partition: int) -> PartitionLog:
        path = self.path / f"{topic}-{partition}"
        if not path.is_dir():
            raise UnknownPartitionError(path, None, f"no directory for {topic}-{partition}")
        return PartitionLog(topic, partition, path, self)
