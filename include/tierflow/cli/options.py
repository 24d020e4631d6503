"""The options several commands share, each defined once (its name, kind and metavar); a
command gives only its own help text, which says what it takes without the option. In a
command table ``options.topic("only this topic [every registered topic]")`` reads as what it
is, and every ``--topic`` parses the same.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from tierflow.cli.spec import Arg, arg, flag


def topic(help: str, **given: Any) -> Arg:
    """``--topic NAME``: only this topic."""
    return arg("--topic", help=help, **given)


def partition(help: str | None = None, **given: Any) -> Arg:
    """``--partition N``: only this partition number."""
    return arg("--partition", type=int, help=help, **given)


def config(help: str) -> Arg:
    """``--config KEY=VALUE``, repeatable: Kafka topic configs."""
    return arg("--config", action="append", default=[], metavar="KEY=VALUE", help=help)


def json(help: str) -> Arg:
    """``--json``: the command's output as one JSON document, for scripts."""
    return flag("--json", help)


def dry_run(help: str) -> Arg:
    """``--dry-run``: say what the command would do, change nothing."""
    return flag("--dry-run", help)


def positive(text: str) -> int:
    """An option's count: argparse names the option and the value when it is below 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def workers(help: str) -> Arg:
    """``--workers N``: how many processes do the command's jobs here (engine.pool)."""
    return arg("--workers", type=positive, metavar="N", help=help)


def now(help: str) -> Arg:
    """``--now ISO``: judge as of this instant (common.parse_now), as a backfill would."""
    return arg("--now", metavar="ISO", help=help)


OWNER = arg(
    "--owner",
    help="the partition leases' owner [cli:<host>:<pid>]; a plain rerun on this host takes "
    "over the lease of a run whose process is gone, and the same --owner takes it over at once "
    "(from a live run too, which then can write nothing more)",
)
KEYRING = arg("--keyring", type=Path, help="key ring file [TIERFLOW_KEYRING]", default=None)
