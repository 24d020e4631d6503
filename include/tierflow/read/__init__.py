"""The read path for tiered partitions: Kafka's RemoteLogManager.read and its helpers.

``fetch.py`` is the entry point (fetch by offset or timestamp); the modules here are its parts:
the RLMM view replayed from the store (metadata_cache), byte counting around the storage
manager (remote_reads), both index caches (``index_cache/memory.py`` in process,
``index_cache/disk.py`` on disk, as Kafka lays it out), the chunk cache of the chunked layout
(chunk_cache), ranged whole-batch reading (segment_reader) and kafka-dump-log formatting
(dump_format). Diskless partitions are read by ``diskless.py``, from WAL objects.
"""
