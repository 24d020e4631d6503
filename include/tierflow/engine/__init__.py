"""The batch engine every rewriting operation runs on: copy, the diskless merge, restore and
the Iceberg export (compaction's two Spark passes read and write through it too).

An operation plans typed jobs; the engine writes them as a batch (``batch_files``), runs each
job on a worker core (``pool``: one spawned process per core for the whole batch) or on Spark
(one task per job, ``executor``), and hands back one result row per job. What a job does on a
worker is the operation's ``JobKind`` (``kind``); nothing here writes metadata state.
"""
