"""The read path for tiered partitions: Kafka's RemoteLogManager.read and its helpers.

``tierflow.fetch`` is the entry point; the modules here are its parts: leader-epoch arithmetic
and the lineage check (epochs), the RLMM view replayed from the store (metadata_cache), byte
counting around the storage manager (remote_reads), the bounded index cache (index_cache),
ranged whole-batch reading (segment_reader) and kafka-dump-log formatting (dump_format).
"""
