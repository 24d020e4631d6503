"""Task body of the index-cache warming DAG: fetch the indexes readers are about to need.

Consumers catching up from the remote tier mostly read the newest tiered segments, so their
indexes are fetched ahead of time; entries of segments that are no longer readable
(deleted, or never finished) are dropped instead of waiting to age out (Kafka leaves them,
I6). Entries used recently by any reader are checked and fetched again if damaged.

Codes like I6 refer to docs/kafka-behaviours.md.
"""

from __future__ import annotations

import logging
import time

from tierflow.config import Settings
from tierflow.metadata.models import RemoteLogSegment, Topic
from tierflow.metadata.states import RemoteLogSegmentState
from tierflow.metadata.store import MetadataStore
from tierflow.read.index_cache import RemoteIndexCache, open_index_cache
from tierflow.read.remote_reads import RemoteReads
from tierflow.runtime import open_storage, open_store
from tierflow.segment_refs import remote_segment

log = logging.getLogger(__name__)

DEFAULT_NEWEST_PER_PARTITION = 3
DEFAULT_RECENTLY_READ_S = 3600.0  # Kafka's remote.log.index.file.cache.ttl.ms default


def warm_index_cache(
    settings: Settings,
    *,
    newest_per_partition: int = DEFAULT_NEWEST_PER_PARTITION,
    recently_read_s: float | None = DEFAULT_RECENTLY_READ_S,
    cache: RemoteIndexCache | None = None,
) -> dict:
    """Prune entries of segments not COPY_SEGMENT_FINISHED, then load the indexes of the
    newest ``newest_per_partition`` finished segments of each partition and of segments read
    within ``recently_read_s`` (None: skip). Returns JSON-able counts and bytes.

    ``cache`` defaults to the one the settings configure.
    """
    if newest_per_partition < 0:
        raise ValueError(f"newest_per_partition must be >= 0, got {newest_per_partition}")
    cache = cache if cache is not None else open_index_cache(settings)
    store = open_store(settings)
    try:
        finished = _finished_segments(store)
    finally:
        store.close()
    live = {row.segment_id: (topic, row) for topic, rows in finished for row in rows}
    pruned = cache.prune(live)

    wanted: list[str] = []
    for _topic, rows in finished:
        if newest_per_partition:
            wanted += [row.segment_id for row in rows[-newest_per_partition:]]
    newest = set(wanted)
    recent: list[str] = []
    if recently_read_s is not None:
        since = time.time() - recently_read_s
        recent = [sid for sid in cache.accessed_since(since) if sid in live and sid not in newest]

    reads = RemoteReads(open_storage(settings))
    before = set(cache.segment_ids())
    misses_before = cache.stats.misses
    for segment_id in wanted + recent:
        topic, row = live[segment_id]
        cache.get(reads, remote_segment(topic, row))
    report = {
        "partitions": len(finished),
        "finished_segments": len(live),
        "pruned": pruned,
        "warmed": len(newest - before),
        "already_cached": len(newest & before),
        "recently_read_checked": len(recent),
        "loads": cache.stats.misses - misses_before,
        "refetched_corrupt": cache.stats.refetched_corrupt,
        "entries": len(cache),
        "cache_bytes": cache.size_bytes,
        "max_bytes": cache.max_bytes,
        "remote_bytes_read": reads.bytes_read,
    }
    log.info("index cache warmed: %s", report)
    return report


def _finished_segments(store: MetadataStore) -> list[tuple[Topic, list[RemoteLogSegment]]]:
    """Per partition, its COPY_SEGMENT_FINISHED segments by start offset."""
    found = []
    for topic in store.topics():
        for part in store.partitions(topic.topic_id):
            rows = store.segments(
                topic.topic_id,
                part.partition,
                states=[RemoteLogSegmentState.COPY_SEGMENT_FINISHED],
            )
            found.append((topic, rows))
    return found
