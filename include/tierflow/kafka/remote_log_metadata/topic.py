"""Reading and writing ``__remote_log_metadata`` with kafka-python, as a broker's RLMM does.

Writes go through an idempotent producer with ``acks=all``: a retry inside the client never
duplicates or reorders a record of a partition, and a record counts as written only once every
in-sync replica has it. Reads are plain assigned consumers with no group, from an offset to the
end the partition had when the read began.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import kafka.errors as kafka_errors
from kafka import KafkaConsumer, KafkaProducer
from kafka.structs import TopicPartition

METADATA_TOPIC = "__remote_log_metadata"
CLIENT_ID = "tierflow-remote-log-metadata"


class MetadataTopicError(RuntimeError):
    """The metadata topic could not be read or written; the message says which and why."""


class PublishError(MetadataTopicError):
    """Sending stopped at a record; ``offsets`` holds the offsets of those written before it."""

    def __init__(self, reason: str, offsets: list[int]) -> None:
        super().__init__(reason)
        self.offsets = offsets


@dataclass(frozen=True)
class MetadataRecord:
    partition: int
    offset: int
    value: bytes


class MetadataTopic:
    """``__remote_log_metadata`` of the cluster at ``bootstrap``."""

    def __init__(
        self,
        bootstrap: str,
        *,
        topic: str = METADATA_TOPIC,
        client_config: Mapping[str, Any] | None = None,
        timeout_s: float = 30,
    ) -> None:
        self.bootstrap, self.topic, self.timeout_s = bootstrap, topic, timeout_s
        self._config = {**(client_config or {}), "bootstrap_servers": bootstrap}
        self._config.setdefault("client_id", CLIENT_ID)

    def partitions(self) -> int:
        """How many partitions the topic has; an error saying why there is none."""
        deadline = time.monotonic() + self.timeout_s
        with self._consumer() as consumer:
            while True:
                found = consumer.partitions_for_topic(self.topic)
                if found:
                    return len(found)
                if time.monotonic() > deadline:
                    raise MetadataTopicError(
                        f"{self.bootstrap} has no topic {self.topic}: are its brokers started "
                        "with remote.log.storage.system.enable=true?"
                    )
                time.sleep(0.5)

    def read(self, partition: int, start: int) -> Iterator[MetadataRecord]:
        """The partition's records from ``start`` (or its first, if that is gone) to the end
        it had when the read began."""
        where = TopicPartition(self.topic, partition)
        with self._consumer() as consumer:
            consumer.assign([where])
            first = consumer.beginning_offsets([where])[where]
            end = consumer.end_offsets([where])[where]
            consumer.seek(where, max(start, first))
            while consumer.position(where) < end:
                for record in consumer.poll(timeout_ms=1000).get(where, ()):
                    if record.offset < end:
                        yield MetadataRecord(partition, record.offset, record.value)

    def end_offset(self, partition: int) -> int:
        where = TopicPartition(self.topic, partition)
        with self._consumer() as consumer:
            return int(consumer.end_offsets([where])[where])

    def publish(self, records: Sequence[tuple[int, bytes]]) -> list[int]:
        """Each (partition, value) written in the order given; their offsets. PublishError
        (with the offsets written before it) at the first that failed."""
        producer = KafkaProducer(
            **self._config, acks="all", enable_idempotence=True, linger_ms=5, retries=2**31 - 1
        )
        try:
            futures = [producer.send(self.topic, value=v, partition=p) for p, v in records]
            producer.flush(timeout=self.timeout_s)
            return _offsets(futures, self.timeout_s)
        finally:
            producer.close(timeout=self.timeout_s)

    def _consumer(self) -> KafkaConsumer:
        return _ClosingConsumer(**self._config, enable_auto_commit=False)


class _ClosingConsumer(KafkaConsumer):  # type: ignore[misc]
    def __enter__(self) -> KafkaConsumer:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def _offsets(futures: list[Any], timeout_s: float) -> list[int]:
    offsets: list[int] = []
    for future in futures:
        try:
            offsets.append(int(future.get(timeout=timeout_s).offset))
        except kafka_errors.KafkaError as error:
            raise PublishError(f"writing {METADATA_TOPIC} failed: {error}", offsets) from error
    return offsets
