"""What every command module shares: the operator's error, the actor it acts as, ``--config``
parsing, the width of its output and the check that a store exists. Imports nothing of tierflow,
nor a library at its top, so any command module (and the parser) may use it."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import socket
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

Options = TypeVar("Options")


class CommandError(Exception):
    """An error for the operator: printed as one line, exit status 2 (exit_codes.USAGE)."""


@contextmanager
def as_command_error(*errors: type[BaseException]) -> Iterator[None]:
    """Turn the library's errors the operator can act on into one-line CommandErrors."""
    try:
        yield
    except errors as exc:
        raise CommandError(str(exc)) from exc


def print_json(document: object) -> None:
    """``--json``: one document on stdout, indented, keys in the order the command built."""
    print(json.dumps(document, indent=2))


def stream_json(head: dict, key: str, items: Iterable[object]) -> None:
    """One JSON document whose ``key`` holds ``items``, written as they come: a dump of a
    1 GiB segment never sits in memory whole."""
    opening = json.dumps({**head, key: []})[:-2]  # everything up to the list's "]}"
    print(opening, end="")
    for index, item in enumerate(items):
        print(("" if index == 0 else ", ") + json.dumps(item), end="")
    print("]}")


def options_from(kind: type[Options], args: argparse.Namespace, **given: Any) -> Options:
    """The dataclass ``kind`` of a command's options, each field the parsed argument of its
    name unless ``given``: an option is named once, in the parser, not again field by field."""
    taken = {
        field.name: getattr(args, field.name)
        for field in dataclasses.fields(kind)  # type: ignore[arg-type]
        if field.init and field.name not in given
    }
    return kind(**taken, **given)


def cli_actor() -> str:
    """Who acts, in the store's events and leases: this host and process. Per process, so a
    run started beside a live one never takes its lease; a rerun takes over the lease of a run
    whose process is gone instead (metadata.lease_holder)."""
    return f"cli:{socket.gethostname()}:{os.getpid()}"


def partition_failed(label: str, message: str) -> None:
    """One line on stderr for a partition that failed while the others went on, naming the
    partition once (the library's message may start with it already)."""
    text = " ".join(message.split())
    if not text.startswith((f"{label}:", f"{label} ")):
        text = f"{label}: {text}"
    print(f"tierflow: error: {text}", file=sys.stderr)


def parse_config(item: str) -> tuple[str, str]:
    """One ``--config KEY=VALUE``."""
    key, sep, value = item.partition("=")
    if not sep:
        raise CommandError(f"--config {item!r}: expected KEY=VALUE")
    return key.strip(), value.strip()


class NotFoundError(CommandError):
    """Something that must exist does not (the store a read-only command reads): exit 3."""


def require_existing_store(db_url: str) -> None:
    """Refuse to go on when the SQLite store is missing: a command that only reads must not
    create an empty store (and its directory) where the operator mistyped a path."""
    from sqlalchemy.engine import make_url  # with the store, not with every command module
    from sqlalchemy.exc import ArgumentError

    try:
        url = make_url(db_url)
    except ArgumentError:
        return  # opening the store names what is wrong with the URL
    if url.get_backend_name() != "sqlite":
        return
    database = url.database or ""
    if database in ("", ":memory:") or database.startswith("file:"):
        return
    if not Path(database).is_file():
        raise NotFoundError(
            f"metadata store {database} does not exist (TIERFLOW_DB_URL; a command that only "
            "reads never creates it: `tierflow db upgrade` or a writing command does)"
        )


def parse_now(text: str) -> int:
    """An ISO-8601 instant in epoch milliseconds; without an offset it is UTC."""
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise CommandError(
            f"--now {text!r}: not an ISO-8601 instant, e.g. 2026-05-01T02:00:00Z"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return int(when.timestamp() * 1000)
