"""Diskless topics (KIP-1163): WAL segment objects, a SQL diskless coordinator, the read path.

Producers' batches for many partitions are buffered into one WAL segment object, uploaded
under a UUID name, then committed to the coordinator, which assigns offsets. Reads look the
batch coordinates up, fetch byte ranges and inject the offsets in memory.

This package only holds plain modules; nothing is imported here, so that
``tierflow.metadata.models`` can import ``tierflow.diskless.models`` without a cycle.
"""
