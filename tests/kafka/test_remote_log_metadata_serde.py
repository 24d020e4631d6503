"""tierflow's ``__remote_log_metadata`` records, judged by Kafka's own code.

``RemoteLogMetadataCheck.java`` runs Kafka's ``RemoteLogMetadataSerde`` and
``RemoteLogMetadataTopicPartitioner`` from the broker's jars, in one JVM for the module. For
records of every shape (hypothesis): what tierflow writes is byte for byte what Kafka writes for
the same fields, Kafka reads it back to those fields, tierflow reads Kafka's bytes back to them
too, and the metadata partition is Kafka's. Values cut short, lengthened or altered are refused
by tierflow exactly where Kafka's deserializer refuses them, so that nothing tierflow publishes
can stop a broker's metadata consumer, and nothing a broker wrote is misread. (One difference,
on purpose: a topic name that is not UTF-8, which Kafka reads with U+FFFD in place of the bad
bytes, tierflow refuses.)
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dev.kafka_broker import kafka_jars
from tierflow.kafka.remote_log_metadata import serde
from tierflow.kafka.remote_log_metadata.partitioner import metadata_partition
from tierflow.kafka.remote_log_metadata.records import (
    PartitionDelete,
    RemoteLogMetadata,
    SegmentMetadata,
    SegmentUpdate,
    TopicIdPartition,
)
from tierflow.kafka.uuid import to_kafka_uuid

pytestmark = [pytest.mark.kafka]
CHECK = Path(__file__).with_name("RemoteLogMetadataCheck.java")
MANY = settings(
    max_examples=max(500, settings.default.max_examples),
    suppress_health_check=[HealthCheck.function_scoped_fixture],
    deadline=None,
)


class Kafka:
    """One JVM answering a line for each line asked."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process

    def ask(self, line: str) -> str:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        return self.process.stdout.readline().rstrip("\n")

    def decode(self, value: bytes) -> str:
        return self.ask(f"decode {value.hex()}")

    def encode(self, record: RemoteLogMetadata) -> bytes:
        answer = self.ask(canonical(record))
        assert not answer.startswith("refused"), answer
        return bytes.fromhex(answer)


@pytest.fixture(scope="module")
def kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kafka]:
    classes = tmp_path_factory.mktemp("rlm-check")
    classpath = f"{kafka_jars()}/*"
    subprocess.run(["javac", "-d", str(classes), "-cp", classpath, str(CHECK)], check=True)
    process = subprocess.Popen(
        ["java", "-cp", f"{classes}:{classpath}", "RemoteLogMetadataCheck"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        encoding="utf-8",
    )
    try:
        yield Kafka(process)
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=30)


def canonical(record: RemoteLogMetadata) -> str:
    """The record's fields as the Java check prints them (epochs as Kafka's sorted map)."""
    p = record.partition
    where = f"{p.topic} {p.topic_id} {p.partition}"
    if isinstance(record, PartitionDelete):
        return f"delete {where} {record.broker_id} {record.event_timestamp_ms} {record.state}"
    custom = _custom(record.custom_metadata)
    if isinstance(record, SegmentUpdate):
        return (
            f"update {where} {record.segment_id} {record.broker_id} "
            f"{record.event_timestamp_ms} {record.state} {custom}"
        )
    epochs = ",".join(f"{e}:{o}" for e, o in sorted(dict(record.leader_epochs).items()))
    return (
        f"segment {where} {record.segment_id} {record.start_offset} {record.end_offset} "
        f"{record.broker_id} {record.max_timestamp_ms} {record.event_timestamp_ms} {epochs} "
        f"{record.size_in_bytes} {custom} {record.state} {str(record.txn_index_empty).lower()}"
    )


def _custom(value: bytes | None) -> str:
    return "-" if value is None else value.hex() or "empty"


# -- records of every shape ---------------------------------------------------------------

INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
OFFSET = st.integers(0, 2**63 - 1)
KAFKA_UUID = st.uuids().map(to_kafka_uuid)
TOPIC = st.text("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", max_size=249)
CUSTOM = st.none() | st.binary(max_size=64)
PARTITIONS = st.builds(TopicIdPartition, TOPIC, KAFKA_UUID, st.integers(0, 2**31 - 1))


@st.composite
def segments(draw: st.DrawFn) -> SegmentMetadata:
    start = draw(OFFSET)
    end = draw(st.integers(start, 2**63 - 1))
    epochs = draw(st.dictionaries(st.integers(0, 2**31 - 1), OFFSET, min_size=1, max_size=6))
    return SegmentMetadata(
        partition=draw(PARTITIONS),
        segment_id=draw(KAFKA_UUID),
        start_offset=start,
        end_offset=end,
        broker_id=draw(INT32),
        max_timestamp_ms=draw(INT64),
        event_timestamp_ms=draw(INT64),
        leader_epochs=tuple(epochs.items()),
        size_in_bytes=draw(INT32),
        state=draw(st.sampled_from(serde.SEGMENT_STATES)),
        custom_metadata=draw(CUSTOM),
        txn_index_empty=draw(st.booleans()),
    )


UPDATES = st.builds(
    SegmentUpdate,
    PARTITIONS,
    KAFKA_UUID,
    INT32,
    INT64,
    st.sampled_from(serde.SEGMENT_STATES),
    CUSTOM,
)
DELETES = st.builds(
    PartitionDelete, PARTITIONS, INT32, INT64, st.sampled_from(serde.PARTITION_DELETE_STATES)
)
RECORDS = segments() | UPDATES | DELETES


@MANY
@given(record=RECORDS)
def test_what_tierflow_writes_is_what_kafka_writes_and_both_read_it_back(
    kafka: Kafka, record: RemoteLogMetadata
) -> None:
    written = serde.serialize(record)
    assert written == kafka.encode(record)
    assert kafka.decode(written) == f"ok {canonical(record)}"
    if isinstance(record, SegmentMetadata):  # written by epoch, as Kafka writes them
        record = replace(record, leader_epochs=tuple(sorted(record.leader_epochs)))
    assert serde.deserialize(written) == record


@MANY
@given(topic_id=KAFKA_UUID, partition=st.integers(0, 2**31 - 1), count=st.integers(1, 1000))
def test_the_metadata_partition_is_kafkas(
    kafka: Kafka, topic_id: str, partition: int, count: int
) -> None:
    kafka_says = kafka.ask(f"partition {topic_id} {partition} {count}")
    assert metadata_partition(topic_id, partition, count) == int(kafka_says)


@MANY
@given(record=RECORDS, data=st.data())
def test_a_value_cut_lengthened_or_altered_is_refused_where_kafka_refuses_it(
    kafka: Kafka, record: RemoteLogMetadata, data: st.DataObject
) -> None:
    value = bytearray(serde.serialize(record))
    how = data.draw(st.sampled_from(["cut", "longer", "byte"]))
    if how == "cut":
        value = value[: data.draw(st.integers(0, len(value) - 1))]
    elif how == "longer":
        value += data.draw(st.binary(min_size=1, max_size=4))
    else:
        value[data.draw(st.integers(0, len(value) - 1))] = data.draw(st.integers(0, 255))
    _same_verdict(kafka, bytes(value))


@pytest.mark.parametrize(
    "change",
    [
        {"start_offset": -1},
        {"start_offset": 10, "end_offset": 9},
        {"leader_epochs": ()},
        {"state": 4},
        {"state": -1},
    ],
    ids=["negative start", "end below start", "no epochs", "state 4", "state -1"],
)
def test_what_kafkas_constructors_refuse_is_never_published_nor_read(
    kafka: Kafka, change: dict
) -> None:
    valid = SegmentMetadata(
        TopicIdPartition("orders", "oDEzXDn5SvOKKzxDqgCy9Q", 0),
        "2F3TkCOQSUC_0RfQ8hdd6Q", 10, 20, 1, 17, 17, ((0, 10),), 100, 0,
    )  # fmt: skip
    record = replace(valid, **change)
    with pytest.raises(ValueError, match="orders-0 cannot be published"):
        serde.serialize(record)
    assert _same_verdict(kafka, serde._encode(record)).startswith("refused")


def test_an_epoch_named_twice_is_not_published_since_kafka_would_keep_one(kafka: Kafka) -> None:
    record = SegmentMetadata(
        TopicIdPartition("orders", "oDEzXDn5SvOKKzxDqgCy9Q", 0),
        "2F3TkCOQSUC_0RfQ8hdd6Q", 10, 20, 1, 17, 17, ((0, 10), (0, 15)), 100, 0,
    )  # fmt: skip
    with pytest.raises(ValueError, match=r"name an epoch twice"):
        serde.serialize(record)
    assert kafka.decode(serde._encode(record)).endswith(" 0:15 100 - 0 false")


def test_other_frames_kinds_and_versions_are_refused_as_kafka_refuses_them(kafka: Kafka) -> None:
    good = serde.serialize(
        PartitionDelete(TopicIdPartition("orders", "oDEzXDn5SvOKKzxDqgCy9Q", 0), 1, 17, 0)
    )
    for value in (b"\x00" + good[1:], good[:1] + b"\x03" + good[2:], good[:2] + b"\x01" + good[3:]):
        assert _same_verdict(kafka, value).startswith("refused")
    with pytest.raises(ValueError, match="unknown remote log metadata apiKey 3"):
        serde.deserialize(good[:1] + b"\x03" + good[2:])


@pytest.mark.parametrize("byte", [0x0A, 0x0D], ids=["LF", "CR"])
def test_a_line_break_in_a_damaged_topic_name_is_read_alike(kafka: Kafka, byte: int) -> None:
    """Found by the test above: one byte of the name altered into a line break. Both read the
    name; the answers stay one line each, so the next question is answered in step."""
    record = PartitionDelete(TopicIdPartition("orders", "oDEzXDn5SvOKKzxDqgCy9Q", 0), 1, 17, 0)
    value = bytearray(serde.serialize(record))
    value[value.index(b"orders") + 2] = byte
    assert _same_verdict(kafka, bytes(value)).startswith("ok delete or ers ")
    assert kafka.decode(serde.serialize(record)) == f"ok {canonical(record)}"


def _same_verdict(kafka: Kafka, value: bytes) -> str:
    """Kafka's reading of ``value``; tierflow's reading must agree: refused by both, or read
    by both to the same fields."""
    kafka_says = kafka.decode(value)
    try:
        ours = f"ok {canonical(serde.deserialize(value))}"
    except ValueError as exc:
        # The one difference, on purpose: a topic name that is not UTF-8 (no broker writes one)
        # Kafka reads with U+FFFD in place of the bad bytes; tierflow refuses it.
        if "UnicodeDecodeError" in str(exc) and "\ufffd" in kafka_says:
            return "refused"
        assert kafka_says.startswith("refused"), f"tierflow refused ({exc}), Kafka: {kafka_says}"
        return kafka_says
    assert kafka_says == one_line(ours)
    return kafka_says


def one_line(text: str) -> str:
    """As the Java check answers: a line break inside a field (a damaged topic name) becomes a
    space, so that each answer stays one line."""
    return text.replace("\n", " ").replace("\r", " ")
