"""What every command module shares: the operator's error, the actor it acts as, ``--config``
parsing and the width of its output. Imports nothing of tierflow, so any command may use it."""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Iterator
from contextlib import contextmanager


class CommandError(Exception):
    """An error for the operator: printed as one line, exit status 2."""


@contextmanager
def as_command_error(*errors: type[BaseException]) -> Iterator[None]:
    """Turn the library's errors the operator can act on into one-line CommandErrors."""
    try:
        yield
    except errors as exc:
        raise CommandError(str(exc)) from exc


def cli_actor() -> str:
    """Who acts, in the store's events and leases: this host and process."""
    return f"cli:{socket.gethostname()}:{os.getpid()}"


def parse_config(item: str) -> tuple[str, str]:
    """One ``--config KEY=VALUE``."""
    key, sep, value = item.partition("=")
    if not sep:
        raise CommandError(f"--config {item!r}: expected KEY=VALUE")
    return key.strip(), value.strip()


def pipe_width(width: int) -> int | None:
    """The terminal's width, or ``width`` for pipes, CI logs and test captures (rather than
    rich's 80-column fallback)."""
    return None if sys.stdout.isatty() else width
