"""The way back: partitions rebuilt from the bucket as log directories a broker loads.

``plan`` chooses the remote segments (COPY_SEGMENT_FINISHED, contiguous, up to an offset);
``partition`` checks the target, never a directory that a broker may be using; ``segment_job``
and ``segment_files`` check each segment's objects and write its files, as a broker names them,
into the partition's staging directory (``staging``); ``place`` moves a partition whose
segments were all written into place whole (``swap``, in steps a crash cannot leave half
done) and records it, and leaves every other one as it was.
"""
