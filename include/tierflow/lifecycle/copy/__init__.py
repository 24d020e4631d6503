"""Copying rolled segments to remote storage: Kafka's RLMCopyTask, made resumable.

Entry: ``steps.py`` (the three steps, and ``copy_partition`` running them here):
``prepare.py`` (``prepare_copy`` takes the partition lease and records COPY_SEGMENT_STARTED),
``finalize.py`` (``finalize_copy`` verifies and records COPY_SEGMENT_FINISHED), ``plan.py``
(the plan and report they pass), ``batch.py`` (many partitions at once: ``tierflow copy``).
Its parts: ``candidates.py`` (which segments Kafka would copy), ``segment_facts.py`` (what a
segment needs besides its batches, before any state is written), ``rewrite.py`` (the
upload, a job kind of the batch engine run on every core or by Spark, its batches checked in the
same read by ``segment_scan.py``), ``liveness.py`` (is a STARTED copy
still being worked on) and ``verify.py`` (reading tiered segments back byte for byte).
"""
