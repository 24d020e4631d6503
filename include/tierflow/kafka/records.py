"""Kafka's framing and codec numbers, as its ``Records`` and ``CompressionType`` define them.

Kept free of kafka-python: a copy checks every batch in the pass that uploads it, and its
processes (the CLI, each worker, each Spark task) should not pay for importing kafka-python's
clients just to know that a batch starts with 12 bytes. What needs kafka-python's parsing (a
legacy message, a damaged batch) loads ``record_batch`` when it meets one.
"""

from __future__ import annotations

LOG_OVERHEAD = 12  # every batch of every magic: int64 base offset + int32 length
LENGTH_OFFSET = 8  # where the int32 length sits in that prefix

# The batch attributes' codec bits (Kafka's CompressionType ids).
CODEC_MASK = 0x07
CODEC_NONE = 0
CODEC_GZIP = 1
CODEC_SNAPPY = 2
CODEC_LZ4 = 3
CODEC_ZSTD = 4
CODEC_NAMES = {
    CODEC_NONE: "none",
    CODEC_GZIP: "gzip",
    CODEC_SNAPPY: "snappy",
    CODEC_LZ4: "lz4",
    CODEC_ZSTD: "zstd",
}
