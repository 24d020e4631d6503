"""Readers and writers for Kafka's on-disk log formats (segments, indexes, checkpoints).

Tiered storage uploads exactly these files, so they are parsed as the broker would, with errors
that name the file and the byte position or line.
"""
