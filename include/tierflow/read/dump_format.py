"""kafka-dump-log's text for record batches, from a local file or a stream of remote bytes.

The lines follow Kafka's DumpLogSegments so output can be compared (and grepped) the same
way: one ``baseOffset: ...`` line per batch and, with deep iteration, one ``| offset: ...``
line per record, keys and payloads decoded as UTF-8 as Kafka's default decoder does.

Unlike Kafka's decoder (which turns bytes that are not UTF-8 into U+FFFD), keys and payloads are
printed reversibly: ``escape`` keeps valid UTF-8 as text and escapes the rest, so ``unescape``
gives back every byte, and a control character in a key can neither vanish nor move the cursor.
"""

from __future__ import annotations

import base64
import dataclasses
import re
import struct
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from kafka.record.default_records import DefaultRecordBatch
from kafka.record.legacy_records import LegacyRecordBatch

from tierflow.kafka.record_batch import (
    BatchHeader,
    iter_batches_in_buffer,
)

_INT32_MAX = 2**31 - 1
TIMESTAMP_TYPES = {-1: "NoTimestampType", 0: "CreateTime", 1: "LogAppendTime"}
CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
CONTROL_TYPES = {
    0: "ABORT",
    1: "COMMIT",
    2: "LEADER_CHANGE",
    3: "SNAPSHOT_HEADER",
    4: "SNAPSHOT_FOOTER",
    5: "KRAFT_VERSION",
    6: "KRAFT_VOTERS",
}


@dataclass(frozen=True)
class DumpedBatch:
    header: BatchHeader
    data: bytes
    is_valid: bool
    last_sequence: int


def dump_batch(position: int, data: bytes, *, source: str) -> DumpedBatch:
    header = next(iter_batches_in_buffer(data, source=source, validate_crc=False))
    header = dataclasses.replace(header, position=position)
    if header.magic == 2:
        batch = DefaultRecordBatch(data)
        return DumpedBatch(header, data, batch.validate_crc(), batch.last_sequence)
    legacy = LegacyRecordBatch(data, header.magic)
    return DumpedBatch(header, data, legacy.validate_crc(), -1)


def batch_line(batch: DumpedBatch) -> str:
    h = batch.header
    count = "null" if h.records_count is None else str(h.records_count)
    return (
        f"baseOffset: {h.base_offset} lastOffset: {h.last_offset} count: {count} "
        f"baseSequence: {h.base_sequence} lastSequence: {batch.last_sequence} "
        f"producerId: {h.producer_id} producerEpoch: {h.producer_epoch} "
        f"partitionLeaderEpoch: {h.partition_leader_epoch} "
        f"isTransactional: {_bool(h.is_transactional)} isControl: {_bool(h.is_control_batch)} "
        f"position: {h.position} {_timestamp_type(h)}: {h.max_timestamp} "
        f"size: {h.size_in_bytes} magic: {h.magic} "
        f"compresscodec: {CODECS.get(h.compression_type, h.compression_type)} "
        f"crc: {h.crc} isvalid: {_bool(batch.is_valid)}"
    )


@dataclass(frozen=True)
class ControlRecord:
    """A control batch's record: its type (``COMMIT``, ``ABORT``, ...) and, for transaction
    markers, the coordinator epoch."""

    type_id: int
    name: str
    coordinator_epoch: int | None = None

    def text(self) -> str:
        if self.coordinator_epoch is not None:
            return f" endTxnMarker: {self.name} coordinatorEpoch: {self.coordinator_epoch}"
        return f" controlType: {self.name}({self.type_id})"


@dataclass(frozen=True)
class DumpedRecord:
    """One record as kafka-dump-log's deep iteration sees it."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    sequence: int | None  # None before magic 2
    header_keys: list[str] | None
    control: ControlRecord | None


def dumped_records(batch: DumpedBatch) -> Iterator[DumpedRecord]:
    h = batch.header
    records: Iterable
    if h.magic == 2:
        records = DefaultRecordBatch(batch.data)
    else:
        records = LegacyRecordBatch(batch.data, h.magic)
    for record in records:
        v2 = h.magic == 2
        yield DumpedRecord(
            offset=record.offset,
            timestamp=record.timestamp,
            key=record.key,
            value=record.value,
            sequence=_sequence(h.base_sequence, record.offset - h.base_offset) if v2 else None,
            header_keys=[k for k, _v in record.headers] if v2 else None,
            control=_control(record.key, record.value) if h.is_control_batch else None,
        )


def record_lines(batch: DumpedBatch, *, print_payload: bool) -> Iterator[str]:
    """One ``| offset: ...`` line per record (deep iteration); keys/payloads if asked."""
    kind = _timestamp_type(batch.header)
    for r in dumped_records(batch):
        line = (
            f"| offset: {r.offset} {kind}: {r.timestamp} "
            f"keySize: {_size(r.key)} valueSize: {_size(r.value)}"
        )
        if r.header_keys is not None:
            line += f" sequence: {r.sequence} headerKeys: [{','.join(r.header_keys)}]"
        if r.control is not None:
            line += r.control.text()
        elif print_payload:
            if r.key is not None:
                line += f" key: {escape(r.key)}"
            if r.value is not None:
                line += f" payload: {escape(r.value)}"
        yield line


def batch_document(batch: DumpedBatch, *, records: bool, payloads: bool) -> dict:
    """``--json``'s form of a batch: ``batch_line``'s fields under Kafka's names, then, with
    ``records``, each record (keys and payloads as base64 with ``payloads``: every byte)."""
    h = batch.header
    document = {
        "baseOffset": h.base_offset,
        "lastOffset": h.last_offset,
        "count": h.records_count,
        "baseSequence": h.base_sequence,
        "lastSequence": batch.last_sequence,
        "producerId": h.producer_id,
        "producerEpoch": h.producer_epoch,
        "partitionLeaderEpoch": h.partition_leader_epoch,
        "isTransactional": h.is_transactional,
        "isControl": h.is_control_batch,
        "position": h.position,
        "timestampType": _timestamp_type(h),
        "maxTimestamp": h.max_timestamp,
        "size": h.size_in_bytes,
        "magic": h.magic,
        "compresscodec": CODECS.get(h.compression_type, str(h.compression_type)),
        "crc": h.crc,
        "isvalid": batch.is_valid,
    }
    if records:
        document["records"] = [_record_document(r, payloads) for r in dumped_records(batch)]
    return document


def _record_document(r: DumpedRecord, payloads: bool) -> dict:
    document: dict = {
        "offset": r.offset,
        "timestamp": r.timestamp,
        "keySize": _size(r.key),
        "valueSize": _size(r.value),
        "sequence": r.sequence,
        "headerKeys": r.header_keys,
    }
    if r.control is not None:
        document["control"] = dataclasses.asdict(r.control)
    elif payloads:
        document["key"] = _base64(r.key)
        document["payload"] = _base64(r.value)
    return document


def _base64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def _control(key: bytes | None, value: bytes | None) -> ControlRecord:
    if key is None or len(key) < 4:
        return ControlRecord(-1, "UNKNOWN")
    type_id = struct.unpack_from(">h", key, 2)[0]
    name = CONTROL_TYPES.get(type_id, "UNKNOWN")
    if type_id in (0, 1) and value is not None and len(value) >= 6:
        return ControlRecord(type_id, name, struct.unpack_from(">i", value, 2)[0])
    return ControlRecord(type_id, name)


def _sequence(base_sequence: int, delta: int) -> int:
    """DefaultRecordBatch.incrementSequence: sequences wrap at Int.MaxValue."""
    if base_sequence < 0:
        return -1
    if base_sequence > _INT32_MAX - delta:
        return delta - (_INT32_MAX - base_sequence) - 1
    return base_sequence + delta


def _timestamp_type(header: BatchHeader) -> str:
    kind = -1 if header.magic == 0 else header.timestamp_type  # v0 has no timestamps
    return TIMESTAMP_TYPES.get(kind, str(kind))


def _size(data: bytes | None) -> int:
    return -1 if data is None else len(data)


# Characters a terminal (or rich) would act on, or drop, instead of showing: control characters
# (ASCII, DEL and U+0080-U+009F) and the line and paragraph separators.
_ESCAPED_CATEGORIES = frozenset({"Cc", "Zl", "Zp"})
_ESCAPE = re.compile(r"\\(?:\\|x([0-9a-f]{2})|u([0-9a-f]{4}))")


def escape(data: bytes) -> str:
    """A key or payload as printable text: valid UTF-8 as itself, with a byte that is not
    UTF-8 as ``\\xNN``, a control character as ``\\xNN`` (ASCII) or ``\\uNNNN``, and the
    backslash as ``\\\\``, so the printed text maps back to exactly one byte string."""
    text = bytes(data).decode("utf-8", errors="surrogateescape")
    if text.isprintable() and "\\" not in text:
        return text  # the common case: nothing to escape
    return "".join(_escape_char(char) for char in text)


def _escape_char(char: str) -> str:
    code = ord(char)
    if char == "\\":
        return "\\\\"
    if 0xDC80 <= code <= 0xDCFF:  # surrogateescape's stand-in for the byte code - 0xDC00
        return f"\\x{code - 0xDC00:02x}"
    if unicodedata.category(char) not in _ESCAPED_CATEGORIES:
        return char
    return f"\\x{code:02x}" if code < 0x80 else f"\\u{code:04x}"


def unescape(text: str) -> bytes:
    """The bytes ``escape`` printed as ``text``: what a script reading the dump gets back."""
    out = bytearray()
    position = 0
    for match in _ESCAPE.finditer(text):
        out += text[position : match.start()].encode("utf-8")
        byte, code = match.groups()
        if byte is not None:
            out.append(int(byte, 16))
        elif code is not None:
            out += chr(int(code, 16)).encode("utf-8")
        else:
            out += b"\\"
        position = match.end()
    out += text[position:].encode("utf-8")
    return bytes(out)


def _bool(value: bool) -> str:
    return "true" if value else "false"
