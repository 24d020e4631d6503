"""KRaft metadata records: one kafka-python ``ApiData`` class per type.

A data record's value in ``__cluster_metadata`` is framed by ``tierflow.kafka.api_message``
(frame version 1, apiKey, record version), then the record body, a flexible-version message.
The bodies are coded by kafka-python's schema-driven ``ApiData`` from the JSON files in
``schemas/``.
"""

from __future__ import annotations

import io

from kafka.protocol.api_data import ApiData
from kafka.protocol.schemas.fields.codecs.tagged_fields import TaggedFields

from tierflow.kafka import api_message
from tierflow.kafka.api_message import Frame, encode_framed
from tierflow.kafka.metadata_log import schemas

# ConfigResource.Type ids as ConfigRecord carries them.
RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4

# LeaderConstants: PartitionChangeRecord.Leader values that are not broker ids.
NO_LEADER = -1
NO_LEADER_CHANGE = -2


# Each class's API_KEY is its MetadataRecordType id. (kafka-python's ApiData cannot have an
# intermediate base class, so the attribute is repeated.)


class RegisterBrokerRecord(ApiData, load_json=schemas):
    API_KEY = 0


class UnregisterBrokerRecord(ApiData, load_json=schemas):
    API_KEY = 1


class TopicRecord(ApiData, load_json=schemas):
    API_KEY = 2


class PartitionRecord(ApiData, load_json=schemas):
    API_KEY = 3


class ConfigRecord(ApiData, load_json=schemas):
    API_KEY = 4


class PartitionChangeRecord(ApiData, load_json=schemas):
    API_KEY = 5


class FenceBrokerRecord(ApiData, load_json=schemas):
    API_KEY = 7


class UnfenceBrokerRecord(ApiData, load_json=schemas):
    API_KEY = 8


class RemoveTopicRecord(ApiData, load_json=schemas):
    API_KEY = 9


class FeatureLevelRecord(ApiData, load_json=schemas):
    API_KEY = 12


class BrokerRegistrationChangeRecord(ApiData, load_json=schemas):
    API_KEY = 17


class BeginTransactionRecord(ApiData, load_json=schemas):
    API_KEY = 23


class AbortTransactionRecord(ApiData, load_json=schemas):
    API_KEY = 25


RECORD_TYPES: dict[int, type[ApiData]] = {
    cls.API_KEY: cls
    for cls in (
        RegisterBrokerRecord,
        UnregisterBrokerRecord,
        TopicRecord,
        PartitionRecord,
        ConfigRecord,
        PartitionChangeRecord,
        FenceBrokerRecord,
        UnfenceBrokerRecord,
        RemoveTopicRecord,
        FeatureLevelRecord,
        BrokerRegistrationChangeRecord,
        BeginTransactionRecord,
        AbortTransactionRecord,
    )
}

# Records whose body has no fields, only a tagged-field section. kafka-python's ApiData needs at
# least one field, so these are checked by hand and written as an empty tagged section.
NO_OP_RECORD = 20
END_TRANSACTION_RECORD = 24
EMPTY_BODY_RECORDS = {NO_OP_RECORD: "NoOpRecord", END_TRANSACTION_RECORD: "EndTransactionRecord"}
EMPTY_BODY = b"\x00"

# Skipping one of these would leave topic state wrong, so an unreadable version is an error
# for them, while other unknown records are skipped.
STATE_RECORDS = frozenset(
    cls.API_KEY
    for cls in (
        TopicRecord,
        PartitionRecord,
        PartitionChangeRecord,
        RemoveTopicRecord,
        ConfigRecord,
    )
)


def read_frame(value: bytes) -> Frame:
    """Split a record value into apiKey, version and body; ValueError when malformed."""
    return api_message.read_frame(value, "metadata")


def knows(frame: Frame) -> bool:
    """Whether this reader has a schema for the frame's apiKey at its version."""
    if frame.api_key in EMPTY_BODY_RECORDS:
        return frame.version == 0
    cls = RECORD_TYPES.get(frame.api_key)
    return cls is not None and frame.version <= cls.max_version


def check_empty_body(frame: Frame) -> None:
    """A fieldless body is a tagged-field section alone (unknown tags are allowed)."""
    buf = io.BytesIO(frame.body)
    try:
        TaggedFields([]).decode(buf, version=frame.version)
    except Exception as exc:
        raise ValueError(f"cannot decode {EMPTY_BODY_RECORDS[frame.api_key]}: {exc!r}") from exc
    if buf.tell() != len(frame.body):
        name = EMPTY_BODY_RECORDS[frame.api_key]
        raise ValueError(f"{len(frame.body) - buf.tell()} trailing bytes after {name}")


def decode_body(frame: Frame) -> ApiData:
    """The record body as its ``ApiData`` class; trailing bytes are refused, as in Kafka."""
    return api_message.decode_body(RECORD_TYPES[frame.api_key], frame)


def api_key(record: ApiData) -> int:
    """The MetadataRecordType id of a record class of this module."""
    key: int = type(record).API_KEY  # type: ignore[attr-defined]
    return key


def encode_value(record: ApiData) -> bytes:
    """A record value as the controller writes it: frame, apiKey, version, then the body."""
    return encode_framed(record, api_key(record))
