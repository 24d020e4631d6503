"""The restore's one error, in a module of its own so that every part can raise it."""

from __future__ import annotations


class RestoreError(Exception):
    """A restore that cannot be done as asked; the message names the partition and why."""
