"""File and directory names of a Kafka log directory.

Segment files are named after their base offset, zero padded to 20 digits so that a plain
lexical sort is also an offset sort; partition directories are ``<topic>-<partition>``.
"""

from __future__ import annotations

import re

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
TXN_INDEX_SUFFIX = ".txnindex"
SNAPSHOT_SUFFIX = ".snapshot"
# The files of one segment, named by its base offset (the snapshot by the offset after it).
SEGMENT_SUFFIXES = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)
# The KRaft metadata log's partition directory, in a controller's or combined node's log dir.
METADATA_PARTITION_DIR = "__cluster_metadata-0"

_OFFSET_PREFIX = re.compile(r"^(\d{20})(?:\.|$)")
_TOPIC = re.compile(r"^[A-Za-z0-9._-]{1,249}$")
# Directories Kafka renames partitions to while deleting, moving between log dirs, or after a
# failed reassignment ("stray"); they hold data that no longer belongs to a live partition.
_NOT_LIVE = re.compile(r"-(delete|future|stray)$")


def offset_prefix(offset: int) -> str:
    """The 20-digit zero-padded form Kafka uses in segment, index and snapshot names."""
    if offset < 0:
        raise ValueError(f"offset must not be negative: {offset}")
    return f"{offset:020d}"


def parse_offset_prefix(filename: str) -> int:
    """``"00000000000000000042.log"`` -> 42; ValueError for names Kafka did not write."""
    match = _OFFSET_PREFIX.match(filename)
    if match is None:
        raise ValueError(f"not a Kafka offset file name (20 digits then a suffix): {filename!r}")
    return int(match.group(1))


def parse_partition_dir(name: str) -> tuple[str, int] | None:
    """``"orders-3"`` -> ``("orders", 3)``; None for anything that is not a live partition."""
    if _NOT_LIVE.search(name):
        return None
    topic, sep, partition = name.rpartition("-")
    if not sep or not partition.isdigit() or not partition.isascii():
        return None
    if not _TOPIC.match(topic) or topic in (".", ".."):
        return None
    return topic, int(partition)
