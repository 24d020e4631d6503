"""Manifest version "1": byte-for-byte against Aiven's SegmentManifestV1SerdeTest, and strict."""

from __future__ import annotations

import json

import pytest

from tierflow.rsm import IndexType
from tierflow.transform.chunk_index import FixedSizeChunkIndex, VariableSizeChunkIndex
from tierflow.transform.errors import ManifestError
from tierflow.transform.manifest import (
    EncryptionMetadata,
    IndexRange,
    SegmentIndexes,
    SegmentManifest,
    SegmentMetadata,
)

# Verbatim from Aiven's SegmentManifestV1SerdeTest (reference §2.2).
AIVEN_MANIFEST = (
    b'{"version":"1","chunkIndex":{"type":"fixed","originalChunkSize":100,'
    b'"originalFileSize":1000,"transformedChunkSize":110,"finalTransformedChunkSize":110},'
    b'"segmentIndexes":{"offset":{"position":0,"size":1},"timestamp":{"position":1,"size":1},'
    b'"producerSnapshot":{"position":2,"size":1},"leaderEpoch":{"position":3,"size":1},'
    b'"transaction":{"position":4,"size":1}},"compression":false,"remoteLogSegmentMetadata":'
    b'{"remoteLogSegmentId":{"topicIdPartition":{"topicId":"lZ6vvmajTWKDBUTV6SQAtQ",'
    b'"topicPartition":{"topic":"topic1","partition":42}},"id":"adh9f8BMS4anaUnD8KWfWg"},'
    b'"startOffset":0,"endOffset":1000,"maxTimestampMs":1000000000,"brokerId":2,'
    b'"eventTimestampMs":2000000000,"segmentLeaderEpochs":{"0":100,"1":200,"2":300}}}'
)

AIVEN_METADATA = SegmentMetadata(
    topic_id="lZ6vvmajTWKDBUTV6SQAtQ",
    topic="topic1",
    partition=42,
    segment_id="adh9f8BMS4anaUnD8KWfWg",
    start_offset=0,
    end_offset=1000,
    max_timestamp_ms=1_000_000_000,
    broker_id=2,
    event_timestamp_ms=2_000_000_000,
    segment_leader_epochs=((2, 300), (0, 100), (1, 200)),  # written sorted, like a TreeMap
)


def aiven_indexes(*, txn: bool) -> SegmentIndexes:
    return SegmentIndexes(
        IndexRange(0, 1),
        IndexRange(1, 1),
        IndexRange(2, 1),
        IndexRange(3, 1),
        IndexRange(4, 1) if txn else None,
    )


def aiven_manifest(*, txn: bool = True, encryption: EncryptionMetadata | None = None):
    return SegmentManifest(
        chunk_index=FixedSizeChunkIndex(100, 1000, 110, 110),
        segment_indexes=aiven_indexes(txn=txn),
        compression=False,
        encryption=encryption,
        remote_log_segment_metadata=AIVEN_METADATA.to_json(),
    )


def test_serialises_exactly_like_aiven() -> None:
    assert aiven_manifest().to_bytes() == AIVEN_MANIFEST


def test_parses_aiven_manifest_and_writes_it_back_identically() -> None:
    parsed = SegmentManifest.parse(AIVEN_MANIFEST, object_key="k.rsm-manifest")
    assert parsed == aiven_manifest()
    assert parsed.to_bytes() == AIVEN_MANIFEST
    assert parsed.segment_indexes.range_for(IndexType.LEADER_EPOCH) == IndexRange(3, 1)


def test_absent_transaction_index_is_null() -> None:
    text = aiven_manifest(txn=False).to_bytes()
    expected = b'"leaderEpoch":{"position":3,"size":1},"transaction":null},"compression":false,'
    assert expected in text
    assert SegmentManifest.parse(text, object_key="k").segment_indexes.transaction is None


def test_encryption_block_as_in_aiven_test() -> None:
    encryption = EncryptionMetadata("static-key-id:AAEC", bytes([10, 11, 12, 13]))
    text = aiven_manifest(encryption=encryption).to_bytes()
    assert (
        b'"compression":false,"encryption":{"dataKey":"static-key-id:AAEC","aad":"CgsMDQ=="},'
        b'"remoteLogSegmentMetadata":' in text
    )
    parsed = SegmentManifest.parse(text, object_key="k")
    assert parsed.encryption == encryption
    assert parsed.encryption.key_id == "static-key-id"


def test_without_segment_metadata_the_field_is_omitted() -> None:
    manifest = SegmentManifest(
        VariableSizeChunkIndex(100, 250, (10, 20, 30)), aiven_indexes(txn=True), True
    )
    raw = json.loads(manifest.to_bytes())
    assert list(raw) == ["version", "chunkIndex", "segmentIndexes", "compression"]
    assert raw["chunkIndex"]["transformedChunks"] == "KLUv/SAPeQAAAAAAAwAAAAoBAAoAAAAe"


def test_segment_metadata_is_kept_verbatim_but_not_checked() -> None:
    raw = json.loads(AIVEN_MANIFEST)
    raw["remoteLogSegmentMetadata"]["somethingNew"] = [1, 2]  # Aiven ignores this object
    text = json.dumps(raw, separators=(",", ":")).encode()
    assert SegmentManifest.parse(text, object_key="k").to_bytes() == text


def _mutated(change) -> bytes:
    raw = json.loads(AIVEN_MANIFEST)
    change(raw)
    return json.dumps(raw).encode()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda m: m.update(extra=1), "unknown field"),
        (lambda m: m["segmentIndexes"]["offset"].update(crc=1), "unknown field"),
        (lambda m: m["segmentIndexes"].pop("transaction"), "missing field"),
        (lambda m: m["segmentIndexes"].update(offset=None), "expected an object"),
        (lambda m: m.update(version=1), "version"),
        (lambda m: m.pop("compression"), "missing field"),
        (lambda m: m.update(compression="no"), "compression"),
        (lambda m: m.update(encryption={"dataKey": "a:b:c", "aad": ""}), "dataKey"),
        (lambda m: m.update(encryption={"dataKey": "k:AAAA"}), "missing field"),
    ],
)
def test_corrupt_manifests_name_the_object_key(change, message: str) -> None:
    with pytest.raises(ManifestError, match=message) as caught:
        SegmentManifest.parse(_mutated(change), object_key="p/t-x/0/000-y.rsm-manifest")
    assert caught.value.key == "p/t-x/0/000-y.rsm-manifest"


def test_garbage_is_a_manifest_error() -> None:
    for data in (b"", b"\xff\xfe", b"[1]", b'{"version":"1"'):
        with pytest.raises(ManifestError, match=r"m\.rsm-manifest"):
            SegmentManifest.parse(data, object_key="m.rsm-manifest")
