"""Kafka's ``__remote_log_metadata`` topic: its records (``records``, ``serde``) and which of its
partitions holds a user partition's records (``partitioner``)."""
