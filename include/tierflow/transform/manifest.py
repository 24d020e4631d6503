"""The segment manifest, version "1", exactly as Aiven's plugin writes and reads it.

Compact JSON in Jackson's field order. Aiven's reader fails on unknown properties, so the
writer never adds a field and the reader refuses any it does not know, except inside
``remoteLogSegmentMetadata``, which Aiven declares read-only and ignores; we keep that object
as it was parsed so that rewriting a manifest (re-wrapping its data key) preserves it.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any

from tierflow.rsm import IndexType, RemoteSegment
from tierflow.transform.chunk_index import (
    ChunkIndex,
    chunk_index_from_json,
    json_int,
    require_exact_fields,
)
from tierflow.transform.encryption import parse_data_key
from tierflow.transform.errors import ManifestError

VERSION = "1"

# segmentIndexes field name per index type, in the order of the .indexes object.
INDEX_FIELDS: dict[IndexType, str] = {
    IndexType.OFFSET: "offset",
    IndexType.TIMESTAMP: "timestamp",
    IndexType.PRODUCER_SNAPSHOT: "producerSnapshot",
    IndexType.LEADER_EPOCH: "leaderEpoch",
    IndexType.TRANSACTION: "transaction",
}
INDEX_ORDER: tuple[IndexType, ...] = tuple(INDEX_FIELDS)


@dataclass(frozen=True)
class IndexRange:
    """Where one index lies in the ``.indexes`` object, in transformed bytes."""

    position: int
    size: int

    def to_json(self) -> dict[str, int]:
        return {"position": self.position, "size": self.size}


@dataclass(frozen=True)
class SegmentIndexes:
    offset: IndexRange
    timestamp: IndexRange
    producer_snapshot: IndexRange
    leader_epoch: IndexRange
    transaction: IndexRange | None

    def range_for(self, index_type: IndexType) -> IndexRange | None:
        return {
            IndexType.OFFSET: self.offset,
            IndexType.TIMESTAMP: self.timestamp,
            IndexType.PRODUCER_SNAPSHOT: self.producer_snapshot,
            IndexType.LEADER_EPOCH: self.leader_epoch,
            IndexType.TRANSACTION: self.transaction,
        }[IndexType(index_type)]

    def to_json(self) -> dict[str, Any]:
        return {
            INDEX_FIELDS[t]: None if (r := self.range_for(t)) is None else r.to_json()
            for t in INDEX_ORDER
        }


@dataclass(frozen=True)
class EncryptionMetadata:
    """``dataKey`` is ``<key id>:<base64 RSA-OAEP(DEK)>``; ``aad`` the raw AAD bytes."""

    data_key: str
    aad: bytes

    @property
    def key_id(self) -> str:
        return parse_data_key(self.data_key)[0]

    def to_json(self) -> dict[str, str]:
        return {"dataKey": self.data_key, "aad": base64.b64encode(self.aad).decode("ascii")}


@dataclass(frozen=True)
class SegmentMetadata(RemoteSegment):
    """What Aiven writes as ``remoteLogSegmentMetadata``: informational, ignored on read.

    Kafka's RemoteLogSegmentMetadata, of which ``RemoteSegment`` is the identifying part.
    """

    max_timestamp_ms: int
    broker_id: int
    event_timestamp_ms: int
    segment_leader_epochs: tuple[tuple[int, int], ...]  # (epoch, start offset) ascending

    def to_json(self) -> dict[str, Any]:
        return {
            "remoteLogSegmentId": {
                "topicIdPartition": {
                    "topicId": self.topic_id,
                    "topicPartition": {"topic": self.topic, "partition": self.partition},
                },
                "id": self.segment_id,
            },
            "startOffset": self.start_offset,
            "endOffset": self.end_offset,
            "maxTimestampMs": self.max_timestamp_ms,
            "brokerId": self.broker_id,
            "eventTimestampMs": self.event_timestamp_ms,
            "segmentLeaderEpochs": {
                str(epoch): start for epoch, start in sorted(self.segment_leader_epochs)
            },
        }


@dataclass(frozen=True)
class SegmentManifest:
    chunk_index: ChunkIndex
    segment_indexes: SegmentIndexes
    compression: bool
    encryption: EncryptionMetadata | None = None
    # The JSON object as written (see SegmentMetadata.to_json), or None when absent.
    remote_log_segment_metadata: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "version": VERSION,
            "chunkIndex": self.chunk_index.to_json(),
            "segmentIndexes": self.segment_indexes.to_json(),
            "compression": self.compression,
        }
        if self.encryption is not None:
            out["encryption"] = self.encryption.to_json()
        if self.remote_log_segment_metadata is not None:
            out["remoteLogSegmentMetadata"] = self.remote_log_segment_metadata
        return out

    def to_bytes(self) -> bytes:
        """Compact UTF-8 JSON, as Jackson's default ObjectMapper writes it."""
        text = json.dumps(self.to_json(), separators=(",", ":"), ensure_ascii=False)
        return text.encode("utf-8")

    @classmethod
    def parse(cls, data: bytes, *, object_key: str) -> SegmentManifest:
        """Parse strictly; any problem is a ManifestError naming ``object_key``."""
        try:
            return _parse(json.loads(data.decode("utf-8")))
        except (UnicodeDecodeError, ValueError, TypeError) as exc:
            raise ManifestError(object_key, f"not a version 1 segment manifest: {exc}") from None


_TOP_FIELDS = {"version", "chunkIndex", "segmentIndexes", "compression"}
_OPTIONAL_TOP = {"encryption", "remoteLogSegmentMetadata"}


def _parse(raw: object) -> SegmentManifest:
    if not isinstance(raw, dict):
        raise ValueError("expected a JSON object")
    if raw.get("version") != VERSION:
        raise ValueError(f'version: expected "1", got {raw.get("version")!r}')
    present_optional = _OPTIONAL_TOP & set(raw)
    require_exact_fields(raw, _TOP_FIELDS | present_optional, "manifest")
    compression = raw["compression"]
    if not isinstance(compression, bool):
        raise ValueError(f"compression: expected true or false, got {compression!r}")
    metadata = raw.get("remoteLogSegmentMetadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise ValueError("remoteLogSegmentMetadata: expected an object")
    return SegmentManifest(
        chunk_index=chunk_index_from_json(raw["chunkIndex"]),
        segment_indexes=_segment_indexes(raw["segmentIndexes"]),
        compression=compression,
        encryption=_encryption(raw.get("encryption")),
        remote_log_segment_metadata=metadata,
    )


def _segment_indexes(raw: object) -> SegmentIndexes:
    if not isinstance(raw, dict):
        raise ValueError("segmentIndexes: expected an object")
    require_exact_fields(raw, set(INDEX_FIELDS.values()), "segmentIndexes")
    ranges: dict[IndexType, IndexRange | None] = {}
    for index_type, name in INDEX_FIELDS.items():
        value = raw[name]
        if value is None and index_type is IndexType.TRANSACTION:
            ranges[index_type] = None
            continue
        where = f"segmentIndexes.{name}"
        if not isinstance(value, dict):
            raise ValueError(f"{where}: expected an object")
        require_exact_fields(value, {"position", "size"}, where)
        ranges[index_type] = IndexRange(
            json_int(value, "position", where), json_int(value, "size", where)
        )
    return SegmentIndexes(
        offset=_required(ranges[IndexType.OFFSET]),
        timestamp=_required(ranges[IndexType.TIMESTAMP]),
        producer_snapshot=_required(ranges[IndexType.PRODUCER_SNAPSHOT]),
        leader_epoch=_required(ranges[IndexType.LEADER_EPOCH]),
        transaction=ranges[IndexType.TRANSACTION],
    )


def _required(found: IndexRange | None) -> IndexRange:
    if found is None:  # only the transaction index may be null; checked while parsing
        raise ValueError("segmentIndexes: a required index is null")
    return found


def _encryption(raw: object) -> EncryptionMetadata | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ValueError("encryption: expected an object")
    require_exact_fields(raw, {"dataKey", "aad"}, "encryption")
    data_key, aad = raw["dataKey"], raw["aad"]
    if not isinstance(data_key, str) or not isinstance(aad, str):
        raise ValueError("encryption: dataKey and aad must be strings")
    parse_data_key(data_key)
    try:
        aad_bytes = base64.b64decode(aad, validate=True)
    except ValueError as exc:  # binascii.Error, or non-ASCII text
        raise ValueError(f"encryption.aad: not base64 ({exc})") from None
    return EncryptionMetadata(data_key, aad_bytes)
