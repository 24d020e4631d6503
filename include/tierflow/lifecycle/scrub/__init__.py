"""The scrubber: re-read tiered segments within a budget of bytes per run, over a rolling pass
of the whole bucket, and record what is wrong with which object (``run.scrub``).

Object stores lose and corrupt data rarely, but not never, and lifecycle rules misfire; a
reader would otherwise be the first to notice. ``check.py`` holds what one segment must pass.
"""
