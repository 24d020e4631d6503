"""Feeding the WAL writer: from files of record batches, or from a Kafka topic.

A file of record batches is what a ``.log`` segment holds (or a producer's batches written
back to back): each batch is one produce request. Batches that already carry offsets, say
from a classic segment, have them unset on the way in; the coordinator assigns new ones.

From Kafka (``TIERFLOW_KAFKA_BOOTSTRAP``): kafka-python's consumer reads the source topic's
records, and each poll's records of a partition become one uncompressed producer batch
(CreateTime, the records' own timestamps, keys, values and headers) for the same partition
number of the diskless topic (tests/kafka feeds one from a real broker's topic).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tierflow.diskless.writer import ProduceResult, WalWriter
from tierflow.kafka.batch_builder import Record, build_batch
from tierflow.kafka.record_batch import iter_batches

MAX_RECORDS_PER_BATCH = 500


@dataclass
class ProduceSummary:
    results: list[ProduceResult] = field(default_factory=list)

    @property
    def batches(self) -> int:
        return len(self.results)

    def offsets(self) -> dict[int, tuple[int, int]]:
        """(first, last) offset assigned per partition."""
        ranges: dict[int, tuple[int, int]] = {}
        for result in self.results:
            if result.coordinate is None:
                continue
            first, last = result.coordinate.base_offset, result.coordinate.last_offset
            low, high = ranges.get(result.partition, (first, last))
            ranges[result.partition] = (min(low, first), max(high, last))
        return ranges


def produce_files(
    writer: WalWriter, topic_id: str, partition: int, paths: Sequence[Path]
) -> ProduceSummary:
    """Every batch of every file, in order, as produce requests; flushed at the end."""
    summary = ProduceSummary()
    for path in paths:
        with open(path, "rb") as handle:
            for header in iter_batches(path, validate_crc=False):
                handle.seek(header.position)
                data = handle.read(header.size_in_bytes)
                summary.results.append(
                    writer.append(
                        topic_id, partition, data, source=str(path), position=header.position
                    )
                )
                writer.poll()
    writer.flush()
    return summary


def records_batch(records: Iterable[Record]) -> bytes:
    """Records as one producer batch (offsets unset, no leader epoch)."""
    return build_batch(list(records), base_offset=0, leader_epoch=-1)


def produce_from_kafka(
    writer: WalWriter,
    *,
    bootstrap: str,
    source_topic: str,
    topic_id: str,
    partitions: Sequence[int],
    max_records: int | None = None,
    idle_timeout_ms: int = 5_000,
) -> ProduceSummary:
    """Consume ``source_topic`` from the beginning until it stays idle for
    ``idle_timeout_ms`` (or ``max_records`` were read), feeding the writer as it goes."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap.split(","),
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        group_id=None,
    )
    summary = ProduceSummary()
    read = 0
    try:
        consumer.assign([TopicPartition(source_topic, p) for p in partitions])
        while max_records is None or read < max_records:
            polled = consumer.poll(timeout_ms=idle_timeout_ms, max_records=MAX_RECORDS_PER_BATCH)
            if not polled:
                break
            for tp, messages in polled.items():
                records = [
                    Record(
                        key=m.key,
                        value=m.value,
                        timestamp=m.timestamp,
                        headers=tuple((k, v) for k, v in (m.headers or [])),
                    )
                    for m in messages
                ]
                read += len(records)
                source = f"{source_topic}-{tp.partition}@{messages[0].offset}"
                summary.results.append(
                    writer.append(topic_id, tp.partition, records_batch(records), source=source)
                )
                writer.poll()
        writer.flush()
    finally:
        consumer.close()
    return summary
