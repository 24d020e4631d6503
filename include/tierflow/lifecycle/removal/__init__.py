"""Removing a deleted topic's remote data (Kafka's RemotePartitionRemover), as a durable job.

Three steps, one module each: ``detect.py`` finds registered topics that Kafka deleted,
``mark.py`` records DELETE_PARTITION_MARKED per partition and retires the name, and
``remove.py`` (the entry) deletes every remote segment and finishes each partition.
"""
