"""Every CLI command as read from the parser, and a minimal argv for one; for the CLI tests."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path

from tierflow.cli import build_parser


def commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser, str | None]]:
    """(path, parser, the help its parent lists it with) for every command and group."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            listed = {choice.dest: choice.help for choice in action._choices_actions}
            for name, sub in action.choices.items():
                yield (*path, name), sub, listed.get(name)
                yield from commands(sub, (*path, name))


ALL = list(commands(build_parser()))

# A value for each required argument, by its dest; a new one fails the test until named here.
PLACEHOLDERS = {
    "name": "orders",
    "topic": "orders",
    "key_id": "k1",
    "partitions": "1",
    "partition": "0",
    "offset": "0",
    "to": "restored-log-dir",  # restore's --to; never written: every run here fails first
}


def minimal_argv(words: tuple[str, ...], parser: argparse.ArgumentParser, tmp: Path) -> list:
    argv = list(words)
    # Of a required group of alternatives (--offset | --timestamp), the first.
    chosen = [g._group_actions[0] for g in parser._mutually_exclusive_groups if g.required]
    for action in parser._actions:
        if not action.required and action not in chosen:
            continue
        if action.nargs == 0:  # a switch
            argv.append(action.option_strings[0])
            continue
        value = str(tmp / "input.log") if action.dest == "files" else PLACEHOLDERS[action.dest]
        argv += [value] if not action.option_strings else [action.option_strings[0], value]
    return argv
