"""The fetch, dump-segment and metadata commands, checked against kafka-python and the store."""

from __future__ import annotations

import argparse
import base64
import json
import re

import pytest
from kafka.record.default_records import DefaultRecordBatch
from kafka.record.memory_records import MemoryRecords

from tests.support.tiered import NOW_MS, Tiered
from tests.unit.read.conftest import finished, local_batches
from tierflow.cli.commands import CommandError
from tierflow.cli.fetch_commands import register
from tierflow.kafka.record_batch import iter_batch_frames
from tierflow.metadata import SegmentTransition, StartedSegment
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.units import human_bytes

CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
FIELD = re.compile(r"(\w+): (\S+)")


def kafka_python_batches(data: bytes):
    records = MemoryRecords(data)
    while (batch := records.next_batch()) is not None:
        yield batch


def expected_batch_fields(batch, position: int) -> dict[str, str]:
    return {
        "baseOffset": str(batch.base_offset),
        "lastOffset": str(batch.last_offset),
        "count": str(batch.records_count),
        "baseSequence": str(batch.base_sequence),
        "lastSequence": str(batch.last_sequence),
        "producerId": str(batch.producer_id),
        "producerEpoch": str(batch.producer_epoch),
        "partitionLeaderEpoch": str(batch.leader_epoch),
        "isTransactional": str(batch.is_transactional).lower(),
        "isControl": str(batch.is_control_batch).lower(),
        "position": str(position),
        ("LogAppendTime" if batch.timestamp_type else "CreateTime"): str(batch.max_timestamp),
        "size": str(batch.size_in_bytes),
        "magic": str(batch.magic),
        "compresscodec": CODECS[batch.compression_type],
        "crc": str(batch.crc),
        "isvalid": "true",
    }


def dump_lines(out: str) -> tuple[list[str], list[str]]:
    lines = out.splitlines()
    assert lines[0].startswith("Dumping ")
    assert lines[1].startswith("Log starting offset: ")
    return lines[:2], lines[2:]


def test_dump_segment_local_and_remote_agree_with_kafka_python(tiered: Tiered, run_cli) -> None:
    seg = finished(tiered, "orders", 0)[1]
    local = next(s for s in tiered.log("orders", 0).segments() if s.base_offset == seg.start_offset)
    status, local_out, _ = run_cli(tiered, "dump-segment", str(local.log_path))
    assert status == 0
    status, remote_out, _ = run_cli(
        tiered,
        "dump-segment",
        "--topic",
        "orders",
        "--partition",
        "0",
        "--segment-id",
        seg.segment_id,
    )
    assert status == 0
    local_head, local_lines = dump_lines(local_out)
    remote_head, remote_lines = dump_lines(remote_out)
    assert local_head[0] == f"Dumping {local.log_path}"
    assert seg.segment_id in remote_head[0]
    assert local_head[1] == remote_head[1] == f"Log starting offset: {seg.start_offset}"
    assert local_lines == remote_lines

    data = local.log_path.read_bytes()
    position = 0
    expected = []
    for batch in kafka_python_batches(data):
        expected.append(expected_batch_fields(batch, position))
        position += batch.size_in_bytes
    assert [dict(FIELD.findall(line)) for line in local_lines] == expected
    assert local_lines[0].startswith("baseOffset: ")


def test_dump_segment_records_agree_with_kafka_python(tiered: Tiered, run_cli) -> None:
    seg = finished(tiered, "payments", 0)[0]
    status, out, _ = run_cli(
        tiered, "dump-segment", "--print-records", "--segment-id", seg.segment_id
    )
    assert status == 0
    record_lines = [line for line in dump_lines(out)[1] if line.startswith("| ")]
    local = tiered.log("payments", 0).segments()[0]
    expected = []
    for batch in kafka_python_batches(local.log_path.read_bytes()):
        for record in batch:
            expected.append(record)
    assert len(record_lines) == len(expected)
    for line, record in zip(record_lines, expected, strict=True):
        head, _, rest = line.partition(" key: ")
        key, _, payload = rest.partition(" payload: ")
        fields = dict(FIELD.findall(head))
        assert fields["offset"] == str(record.offset)
        assert fields["CreateTime"] == str(record.timestamp)
        assert fields["keySize"] == str(len(record.key) if record.key is not None else -1)
        assert fields["valueSize"] == str(len(record.value) if record.value is not None else -1)
        assert fields["headerKeys"].strip("[]") == ",".join(k for k, _ in record.headers)
        assert key == record.key.decode()
        assert payload == record.value.decode("utf-8", errors="replace")


def test_dump_segment_shows_transaction_markers(tiered: Tiered, run_cli) -> None:
    local = tiered.log("orders", 0).segments()[0]
    status, out, _ = run_cli(tiered, "dump-segment", "--deep-iteration", str(local.log_path))
    assert status == 0
    markers = [line for line in out.splitlines() if "endTxnMarker:" in line]
    controls = [b for b in local_batches(tiered, "orders", 0) if b.header.is_control_batch]
    assert len(markers) == len([c for c in controls if c.segment.base_offset == 0]) > 0
    assert all(
        re.search(r"endTxnMarker: (COMMIT|ABORT) coordinatorEpoch: \d+$", m) for m in markers
    )
    assert " payload: " not in out  # deep iteration without --print-records prints no data


def test_streamed_frames_do_not_depend_on_chunk_boundaries(tiered: Tiered) -> None:
    data = tiered.log("orders", 1).segments()[1].log_path.read_bytes()
    whole = list(iter_batch_frames([data], source="x"))
    chunks = [data[i : i + 997] for i in range(0, len(data), 997)]
    assert list(iter_batch_frames(chunks, source="x")) == whole
    assert b"".join(frame for _pos, frame in whole) == data


def test_dump_segment_needs_exactly_one_source(tiered: Tiered, run_cli) -> None:
    with pytest.raises(CommandError, match=r"either a local \.log path or --segment-id"):
        run_cli(tiered, "dump-segment")
    with pytest.raises(CommandError, match="no remote segment 'nope'"):
        run_cli(tiered, "dump-segment", "--segment-id", "nope")
    seg = finished(tiered, "orders", 0)[0]
    with pytest.raises(CommandError, match="belongs to topic orders, not payments"):
        run_cli(tiered, "dump-segment", "--segment-id", seg.segment_id, "--topic", "payments")


def test_fetch_prints_batches_and_the_remote_bytes_read(tiered: Tiered, run_cli) -> None:
    batch = local_batches(tiered, "orders", 1)[40]
    status, out, _ = run_cli(
        tiered,
        "fetch",
        "--topic",
        "orders",
        "--partition",
        "1",
        "--offset",
        str(batch.header.last_offset),
        "--max-bytes",
        "1",
        "--print-records",
    )
    assert status == 0
    lines = out.splitlines()
    assert (
        f"baseOffset: {batch.header.base_offset} lastOffset: {batch.header.last_offset}" in lines[0]
    )
    assert f"position: {batch.header.position} " in lines[0]
    assert (
        len([line for line in lines if line.startswith("| offset: ")]) == batch.header.records_count
    )
    assert lines[-1].startswith(f"1 batches ({human_bytes(len(batch.data))}), ")
    status, out, _ = run_cli(
        tiered,
        *("fetch", "--topic", "orders", "--partition", "1", "--offset"),
        *(str(batch.header.last_offset), "--max-bytes", "1", "--print-records", "--json"),
    )
    report = json.loads(out)
    assert 0 < report["remote_bytes_read"] < 16 * 1024
    assert re.search(r"; remote bytes read: [\d.]+ (B|KiB)$", lines[-1])  # the index cache
    # may be warm by now: the text run read its own count
    (dumped,) = report["batches"]
    assert (dumped["baseOffset"], dumped["size"]) == (batch.header.base_offset, len(batch.data))
    records = list(DefaultRecordBatch(batch.data))
    assert [r["offset"] for r in dumped["records"]] == [r.offset for r in records]
    for document, record in zip(dumped["records"], records, strict=True):
        if dumped["isControl"]:
            assert document["control"]["name"] in ("COMMIT", "ABORT")
        else:
            assert _unbase64(document["key"]) == record.key
            assert _unbase64(document["payload"]) == record.value


def _unbase64(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


def test_fetch_by_timestamp_names_the_record_found(tiered: Tiered, run_cli) -> None:
    seg = finished(tiered, "payments", 0)[0]
    status, out, _ = run_cli(
        tiered,
        "fetch",
        "--topic",
        "payments",
        "--partition",
        "0",
        "--timestamp",
        str(seg.max_timestamp_ms),
        "--max-bytes",
        "1",
    )
    assert status == 0
    assert re.match(rf"timestamp {seg.max_timestamp_ms}: first record at offset \d+", out)


def test_fetch_out_of_range_is_an_operator_error(tiered: Tiered, run_cli) -> None:
    with pytest.raises(CommandError, match=r"orders-0: offset 99999 is out of range .*offsets 0-"):
        run_cli(tiered, "fetch", "--topic", "orders", "--partition", "0", "--offset", "99999")
    with pytest.raises(CommandError, match="unknown topic 'nope'"):
        run_cli(tiered, "fetch", "--topic", "nope", "--partition", "0", "--offset", "0")


def test_metadata_lists_every_segment_with_its_state(fresh_tiered: Tiered, run_cli) -> None:
    t = fresh_tiered
    deleting = finished(t, "orders", 1)[0]
    t.store.transition_segment(
        SegmentTransition(deleting.segment_id, S.DELETE_SEGMENT_STARTED), actor="t", now_ms=NOW_MS
    )
    t.store.add_segment(
        StartedSegment(
            segment_id="in-flight-segment-id",
            topic_id=t.store.topic("orders").topic_id,
            partition=1,
            start_offset=1147,
            end_offset=1727,
            max_timestamp_ms=NOW_MS,
            segment_leader_epochs=[(3, 1147)],
            segment_size_bytes=64288,
            txn_index_empty=True,
        ),
        actor="test",
        now_ms=NOW_MS,
    )
    status, out, _ = run_cli(t, "metadata")
    assert status == 0
    rows = {}
    for topic_id in {t.store.topic(n).topic_id for n in ("orders", "payments")}:
        for part in t.store.partitions(topic_id):
            rows.update({r.segment_id: r for r in t.store.segments(topic_id, part.partition)})
    assert len(rows) == 8
    for segment_id, row in rows.items():
        line = next(line for line in out.splitlines() if segment_id in line)
        assert row.state in line
        assert f" {row.start_offset} " in line and f" {row.end_offset} " in line
    assert "orders-1  log start 0" in out

    status, out, _ = run_cli(t, "metadata", "--topic", "orders", "--partition", "1", "--json")
    [report] = json.loads(out)
    states = {s["segment_id"]: (s["state"], s["referenced"]) for s in report["segments"]}
    assert states[deleting.segment_id] == ("DELETE_SEGMENT_STARTED", False)
    assert states["in-flight-segment-id"] == ("COPY_SEGMENT_STARTED", False)
    assert list(states.values()).count(("COPY_SEGMENT_FINISHED", True)) == 1
    assert report["highest_remote_offset"] == finished(t, "orders", 1)[-1].end_offset

    status, out, _ = run_cli(t, "metadata", "--state", "COPY_SEGMENT_STARTED", "--json")
    listed = [s["segment_id"] for report in json.loads(out) for s in report["segments"]]
    assert listed == ["in-flight-segment-id"]


def test_every_option_is_explained_in_help() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    register(sub)
    for name in ("fetch", "dump-segment", "metadata"):
        command = sub.choices[name]
        assert command.description
        for action in command._actions:
            assert action.help, f"{name} {action.option_strings or action.dest} has no help"
