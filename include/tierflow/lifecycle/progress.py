"""How a long operation says how far it got, without knowing who is watching.

Copy, verify, reconcile and key re-wrapping take a ``progress`` argument; the CLI passes its
bar or its log lines (cli/progress.py), everyone else passes nothing. The operation calls
``add_total`` as it discovers work (a partition at a time, so totals grow), ``note`` when it
starts on an item, and ``advance`` when an item is done.
"""

from __future__ import annotations

from typing import Protocol


class Progress(Protocol):
    """Where an operation reports its work in segments and bytes."""

    def add_total(self, segments: int = 0, bytes: int = 0) -> None:
        """More work found: totals may grow while the work runs."""

    def advance(self, segments: int = 0, bytes: int = 0) -> None:
        """Work done."""

    def note(self, label: str) -> None:
        """What is being worked on now, e.g. ``orders-0 00000000000000001200.log``."""


class NoProgress:
    """The default: nobody watches, so the operations need no ``if progress`` of their own."""

    def add_total(self, segments: int = 0, bytes: int = 0) -> None:
        pass

    def advance(self, segments: int = 0, bytes: int = 0) -> None:
        pass

    def note(self, label: str) -> None:
        pass


NO_PROGRESS = NoProgress()
