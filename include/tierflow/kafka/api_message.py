"""The frame Kafka's ``AbstractApiMessageSerde`` puts around a flexible-version message.

KRaft's metadata records (``__cluster_metadata``) and the remote log metadata records
(``__remote_log_metadata``) are both written so: three unsigned varints (frame version 1, the
apiKey, the record version), then the body. The bodies are coded by kafka-python's
schema-driven ``ApiData``; this module only frames them, the same way for both topics.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

from kafka.protocol.api_data import ApiData
from kafka.protocol.schemas.fields.codecs.types import UnsignedVarInt32

FRAME_VERSION = 1  # frame 0 (the 2.8 KRaft preview) is refused by Kafka's serde too


@dataclass(frozen=True)
class Frame:
    """A record value split into what it is and its body, before the body is decoded."""

    api_key: int
    version: int
    body: bytes


def read_frame(value: bytes, kind: str) -> Frame:
    """Split a record value into apiKey, version and body; ValueError when malformed.
    ``kind`` names the records in the error (``metadata``, ``remote log metadata``)."""
    buf = io.BytesIO(value)
    try:
        frame_version = UnsignedVarInt32.decode(buf)
        api_key = UnsignedVarInt32.decode(buf)
        version = UnsignedVarInt32.decode(buf)
    except Exception as exc:  # kafka-python raises IndexError/struct.error on short input
        raise ValueError(f"cannot read the record frame: {exc!r}") from exc
    if frame_version != FRAME_VERSION:
        raise ValueError(f"unsupported {kind} frame version {frame_version}")
    return Frame(api_key, version, value[buf.tell() :])


def decode_body(cls: type[ApiData], frame: Frame) -> ApiData:
    """The body as ``cls``; trailing bytes are refused, as Kafka's serde refuses them."""
    buf = io.BytesIO(frame.body)
    try:
        record = cls.decode(buf, version=frame.version, header=False)
    except Exception as exc:  # truncated or garbled bodies surface as many error types
        raise ValueError(f"cannot decode {cls.__name__} v{frame.version}: {exc!r}") from exc
    if buf.tell() != len(frame.body):
        raise ValueError(
            f"{len(frame.body) - buf.tell()} trailing bytes after {cls.__name__} v{frame.version}"
        )
    return record


def frame_header(api_key: int, version: int) -> bytes:
    return b"".join(UnsignedVarInt32.encode(n) for n in (FRAME_VERSION, api_key, version))


def encode_framed(record: ApiData, api_key: int) -> bytes:
    """A record value as Kafka writes it: the frame, then the body."""
    if record.version is None:
        raise ValueError(f"{type(record).__name__} needs a version to be encoded")
    return frame_header(api_key, record.version) + record.encode(header=False)
