"""Remote index caches. This package is the disk one: Kafka's RemoteIndexCache on disk (the
in-process cache is ``memory.py``): the offset, time and transaction indexes of remote segments.

Laid out as Kafka lays it out (I3): ``<cache dir>/remote-log-index-cache/<startOffset>_<segmentId>``
with ``.index``, ``.timeindex`` and ``.txnindex``; the start offset is decimal and not padded.
The files outlive the process, so a restarted reader (or another process: the CLI, an Airflow
worker) finds the indexes without a remote round trip.

How it follows Kafka, and where it differs:

* Keyed by segment id (I1); the weight of an entry is the size of its three files and the
  total stays within ``remote.log.index.file.cache.total.size.bytes`` (I2). Eviction is least
  recently used (Kafka's Caffeine uses Window TinyLFU). Access times are kept in memory and
  written to the ``.index`` file's mtime now and then, so a restart, or another process,
  rebuilds the order from the files.
* Load on miss (I4): each existing file is read with the format's own checks; a corrupt or
  truncated one is fetched again. Fetched bytes go to a ``.tmp`` file, are checked there and
  renamed into place. A transaction index missing remotely becomes an empty file.
* Startup (I5): leftover ``.deleted`` files are removed, and so are ``.tmp`` files and
  incomplete entry sets older than ``stale_after_s`` (younger ones may be another process's
  write in flight). Unlike Kafka, a corrupt file found at startup does not fail the
  constructor: files are checked when first used and fetched again if bad.
* Removal (I6): files are renamed to ``.deleted`` and then deleted. Unlike Kafka, entries of
  segments deleted by retention need not age out: ``prune(live_ids)`` drops them.
* Lookups (I7): ``lookup_offset`` and ``lookup_timestamp`` as Kafka's.

Concurrency: threads share one lock for the bookkeeping, and only one thread loads a given
segment at a time. Processes share nothing but the directory: every file appears by atomic
rename, and before adding an entry the cache re-reads the directory, so the byte budget holds
for the files of every process (give all of them the same budget), apart from the moment two
of them add at once.

Codes like I3 refer to docs/kafka-behaviours.md.
"""

from tierflow.read.index_cache.disk import (
    DEFAULT_MAX_BYTES,
    RemoteIndexCache,
    open_index_cache,
)
from tierflow.read.index_cache.disk_entry import IndexCacheStats, IndexEntry
from tierflow.read.index_cache.disk_files import (
    DIR_NAME,
    IndexCacheError,
    file_prefix,
    parse_file_name,
)

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DIR_NAME",
    "IndexCacheError",
    "IndexCacheStats",
    "IndexEntry",
    "RemoteIndexCache",
    "file_prefix",
    "open_index_cache",
    "parse_file_name",
]
