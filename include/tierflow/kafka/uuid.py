"""Kafka's Uuid text form: 16 bytes as URL-safe base64 without padding (22 characters).

Topic ids (``partition.metadata``) and remote segment ids use this form, and so does every
object key, so the three must agree byte for byte.
"""

from __future__ import annotations

import base64
import re
import uuid

_KAFKA_UUID = re.compile(r"[A-Za-z0-9_-]{22}")

# Kafka reserves these two: the zero id and the id of the metadata topic.
ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"
METADATA_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"
_RESERVED = {ZERO_UUID, METADATA_TOPIC_ID}
# The namespace of derived topic ids (uuid5): fixed, so a derivation never changes.
_DERIVED_NAMESPACE = uuid.UUID("5b1f8f0e-7a43-4c39-9a4e-2f6f4c1b8d21")


def to_kafka_uuid(value: uuid.UUID) -> str:
    """Encode a UUID the way Kafka's ``Uuid.toString`` does."""
    return base64.urlsafe_b64encode(value.bytes).decode("ascii").rstrip("=")


def from_kafka_uuid(text: str) -> uuid.UUID:
    """Decode Kafka's 22-character form; raise ValueError naming the bad text."""
    if not _KAFKA_UUID.fullmatch(text):
        raise ValueError(f"not a Kafka Uuid (22 URL-safe base64 characters): {text!r}")
    raw = base64.urlsafe_b64decode(text + "==")
    if len(raw) != 16:
        raise ValueError(f"not a Kafka Uuid (expected 16 bytes): {text!r}")
    return uuid.UUID(bytes=raw)


def is_kafka_uuid(text: str) -> bool:
    try:
        from_kafka_uuid(text)
    except ValueError:
        return False
    return True


def new_kafka_uuid() -> str:
    """A fresh random id; like Kafka, never reserved and never starting with '-'.

    A leading '-' would make the id look like a command-line flag, which is why Kafka redraws.
    """
    while True:
        text = to_kafka_uuid(uuid.uuid4())
        if not text.startswith("-") and text not in _RESERVED:
            return text


def derived_kafka_uuid(seed: str) -> str:
    """A stable id from ``seed``, for a topic whose broker never wrote one (Kafka before 2.8
    has no partition.metadata): the same seed always gives the same id, never a reserved one
    and never one starting with '-'."""
    attempt = 0
    while True:
        text = to_kafka_uuid(uuid.uuid5(_DERIVED_NAMESPACE, f"{seed}#{attempt}"))
        if not text.startswith("-") and text not in _RESERVED:
            return text
        attempt += 1
