"""Traffic for one partition: who produces what, when, and under which leader epoch.

Time advances with the bytes written, so a partition's records spread evenly over its history
window whatever the segment size. Leader elections happen at random points of that window;
transactions stay open across other producers' batches (and sometimes across a roll), and the
second transaction to complete on a partition takes the outcome the first did not, so any
partition with two or more transactions shows both a COMMIT and an ABORT.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from tierflow.demo.partition_log import PartitionLogWriter
from tierflow.demo.payloads import make_record
from tierflow.demo.producers import ProducerMode, ProducerSpec
from tierflow.demo.topics import TopicSpec
from tierflow.kafka.batch_builder import ProducerFields, Record, build_batch, build_control_batch
from tierflow.kafka.records import CODEC_NONE

# Room kept free in the active segment so closing open transactions never forces a roll.
_MARKER_RESERVE = 256
_ABORT_SHARE = 0.25


@dataclass(frozen=True)
class Timeline:
    """Maps bytes written so far to wall-clock milliseconds inside [start_ms, end_ms]."""

    start_ms: int
    end_ms: int
    expected_bytes: int

    def at(self, written: int) -> int:
        fraction = min(1.0, written / self.expected_bytes)
        return self.start_ms + int((self.end_ms - self.start_ms) * fraction)


@dataclass
class _Client:
    """Client-side state of one producer on this partition."""

    spec: ProducerSpec
    clock_skew_ms: int
    next_sequence: int = 0
    open_txn_batches: int = 0  # data batches in its ongoing transaction; 0 = none open


class PartitionTraffic:
    """Drive ``log`` until it has ``topic.segments`` rolled segments and a partly filled one."""

    def __init__(
        self,
        log: PartitionLogWriter,
        *,
        topic: TopicSpec,
        producers: tuple[ProducerSpec, ...],
        rng: random.Random,
        timeline: Timeline,
        active_fill_bytes: int,
    ) -> None:
        self._log = log
        self._topic = topic
        self._rng = rng
        self._timeline = timeline
        self._active_fill_bytes = active_fill_bytes
        self._clients = [_Client(spec, rng.randint(-40, 40)) for spec in producers]
        self._weights = [spec.weight for spec in producers]
        self._written = 0
        self._broker_clock = timeline.start_ms
        self._epoch = 0 if topic.start_offset == 0 else rng.randint(2, 6)
        self._elections = sorted(
            int(timeline.expected_bytes * rng.uniform(0.05, 0.95)) for _ in range(rng.randint(2, 4))
        )
        self._commits = 0
        self._aborts = 0

    def run(self) -> None:
        while not self._active_is_full():
            self._maybe_elect_leader()
            client = self._rng.choices(self._clients, weights=self._weights)[0]
            commit: bool | None = None
            if client.open_txn_batches and self._rng.random() < self._end_chance(client):
                commit = self._decide_commit()
                batch = self._marker(client, commit=commit)
            else:
                batch = self._data_batch(client)
            if self._is_last_segment() and (
                self._log.active_size + len(batch) + _MARKER_RESERVE > self._log.segment_bytes
            ):
                break
            self._append(client, batch, commit=commit)
        for client in self._clients:
            if client.open_txn_batches:
                self._append(client, self._marker(client, commit=True), commit=True)
        if self._log.rolled_segments != self._topic.segments:
            raise RuntimeError(
                f"{self._log.directory}: rolled {self._log.rolled_segments} segments, "
                f"expected {self._topic.segments}"
            )

    def _is_last_segment(self) -> bool:
        return self._log.rolled_segments >= self._topic.segments

    def _active_is_full(self) -> bool:
        return self._is_last_segment() and self._log.active_size >= self._active_fill_bytes

    def _maybe_elect_leader(self) -> None:
        """A new leader (sometimes after a skipped epoch) once the next election point passes."""
        while self._elections and self._written >= self._elections[0]:
            self._elections.pop(0)
            self._epoch += self._rng.choice((1, 1, 2))

    @staticmethod
    def _end_chance(client: _Client) -> float:
        return min(0.8, 0.15 + 0.2 * client.open_txn_batches)

    def _decide_commit(self) -> bool:
        """Random outcome, but the second transaction guarantees both outcomes appear."""
        if self._commits + self._aborts == 1:
            return self._aborts > 0
        return self._rng.random() >= _ABORT_SHARE

    def _now(self) -> int:
        return self._timeline.at(self._written)

    def _records(self, client: _Client) -> list[Record]:
        """Compressed producers linger for bigger batches, which also keeps codecs effective."""
        count = (
            self._rng.randint(4, 20) if client.spec.codec != CODEC_NONE else self._rng.randint(1, 8)
        )
        timestamp = self._now() + client.clock_skew_ms
        records = []
        for _ in range(count):
            # Mostly ascending, occasionally a record stamped a little earlier than the last.
            timestamp = max(0, timestamp + self._rng.randint(-8, 30))
            records.append(make_record(self._topic.name, self._rng, timestamp))
        return records

    def _data_batch(self, client: _Client) -> bytes:
        spec = client.spec
        records = self._records(client)
        log_append_time = None
        if self._topic.log_append_time:
            self._broker_clock = max(self._broker_clock, self._now() + self._rng.randint(1, 25))
            log_append_time = self._broker_clock
        return build_batch(
            records,
            base_offset=self._log.next_offset,
            leader_epoch=self._epoch,
            compression=spec.codec,
            producer=ProducerFields(
                producer_id=spec.producer_id,
                producer_epoch=spec.producer_epoch,
                base_sequence=-1 if spec.mode is ProducerMode.PLAIN else client.next_sequence,
                transactional=spec.mode is ProducerMode.TRANSACTIONAL,
            ),
            log_append_time=log_append_time,
        )

    def _marker(self, client: _Client, *, commit: bool) -> bytes:
        spec = client.spec
        return build_control_batch(
            base_offset=self._log.next_offset,
            leader_epoch=self._epoch,
            producer_id=spec.producer_id,
            producer_epoch=spec.producer_epoch,
            commit=commit,
            timestamp=self._now() + self._rng.randint(5, 200),
            coordinator_epoch=spec.coordinator_epoch,
        )

    def _append(self, client: _Client, batch: bytes, *, commit: bool | None = None) -> None:
        """Append, then advance the client's state only for what the log accepted.

        ``commit`` is None for a data batch and the marker's outcome for a control batch.
        """
        start_offset = self._log.next_offset
        self._log.append(batch)
        self._written += len(batch)
        count = self._log.next_offset - start_offset
        if commit is not None:
            client.open_txn_batches = 0
            if commit:
                self._commits += 1
            else:
                self._aborts += 1
            return
        if client.spec.mode is not ProducerMode.PLAIN:
            client.next_sequence += count
        if client.spec.mode is ProducerMode.TRANSACTIONAL:
            client.open_txn_batches += 1
