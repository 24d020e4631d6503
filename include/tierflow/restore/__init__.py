"""The way back: partitions rebuilt from the bucket as log directories a broker loads.

``plan`` chooses the remote segments (COPY_SEGMENT_FINISHED, contiguous, up to an offset);
``segment_files`` writes one segment's files as a broker names them; ``partition`` writes a
whole partition directory with its checkpoints, resumably, and never into a directory that a
broker may be using.
"""
