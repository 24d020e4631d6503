"""What the demo broker hosts: topics, their producers' codecs and their quirks."""

from __future__ import annotations

from dataclasses import dataclass

from tierflow.kafka.records import (
    CODEC_GZIP,
    CODEC_LZ4,
    CODEC_NAMES,
    CODEC_NONE,
    CODEC_SNAPPY,
    CODEC_ZSTD,
)


@dataclass(frozen=True)
class TopicSpec:
    """One topic of the generated log dir.

    ``segments`` counts rolled segments per partition; each partition also gets an active one.
    ``codecs`` are the ``compression.type`` settings of the topic's producers: every producer
    uses one, so each partition carries batches of all of them. ``start_offset`` > 0 makes the
    log look as if retention had already deleted older segments. ``lagging_partitions`` have a
    high watermark held back inside their last rolled segment (a follower not caught up).
    """

    name: str
    partitions: int
    segments: int
    codecs: tuple[int, ...] = (CODEC_GZIP, CODEC_LZ4, CODEC_ZSTD, CODEC_NONE)
    transactional: bool = False
    log_append_time: bool = False
    start_offset: int = 0
    lagging_partitions: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.partitions < 1:
            raise ValueError(f"topic {self.name!r}: partitions must be >= 1")
        if self.segments < 1:
            raise ValueError(f"topic {self.name!r}: needs at least one rolled segment")
        if not self.codecs or any(codec not in CODEC_NAMES for codec in self.codecs):
            raise ValueError(f"topic {self.name!r}: codecs must be Kafka codec ids 0-4")
        if self.start_offset < 0:
            raise ValueError(f"topic {self.name!r}: start_offset must be >= 0")
        for partition in self.lagging_partitions:
            if not 0 <= partition < self.partitions:
                raise ValueError(f"topic {self.name!r}: no partition {partition} to lag")


DEMO_TOPICS: tuple[TopicSpec, ...] = (
    TopicSpec(
        name="orders",
        partitions=3,
        segments=4,
        codecs=(CODEC_GZIP, CODEC_LZ4, CODEC_ZSTD, CODEC_NONE),
        transactional=True,
        lagging_partitions=(1,),
    ),
    TopicSpec(
        name="clickstream",
        partitions=2,
        segments=5,
        codecs=(CODEC_LZ4, CODEC_ZSTD, CODEC_GZIP, CODEC_SNAPPY),
        start_offset=48_213,
    ),
    TopicSpec(
        name="payments",
        partitions=1,
        segments=3,
        codecs=(CODEC_ZSTD, CODEC_GZIP, CODEC_NONE),
        transactional=True,
        log_append_time=True,
    ),
    # Producers left at compression.type=none, common in practice: tiering compresses these.
    TopicSpec(
        name="audit-log",
        partitions=1,
        segments=3,
        codecs=(CODEC_NONE,) * 4,  # four producers: one plain, three idempotent
    ),
)
