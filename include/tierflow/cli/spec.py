"""Subcommands as data: each command module lists what its commands are (name, help, options,
function), and ``add_commands`` makes the argparse calls, always in the same way.

argparse stays (not click or typer): the help text, usage lines and error messages of every
command are part of the CLI's contract, and both would print them differently.

A command module imports little more than this, so that the parser is built (for ``--help``, or
to run any one command) without the libraries the commands use: its functions are ``Deferred``
to a module of the command's work, imported when the command runs.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

Handler = Callable[[argparse.Namespace], int]


@dataclass(frozen=True)
class Deferred:
    """A command's function, ``name`` of ``module``, imported when the command runs: building
    the parser then loads none of what it needs (SQLAlchemy, kafka-python, rich, cloud SDKs)."""

    module: str
    name: str

    def __call__(self, args: argparse.Namespace) -> int:
        run: Handler = getattr(importlib.import_module(self.module), self.name)
        return run(args)


@dataclass(frozen=True)
class Work:
    """The module of a command module's work: ``WORK.name`` is its function ``name``,
    ``Deferred``, so a command table names each function once, where it uses it."""

    module: str

    def __getattr__(self, name: str) -> Deferred:
        if name.startswith("_"):  # copy, pickle and the like probe for dunders
            raise AttributeError(name)
        return Deferred(self.module, name)


@dataclass(frozen=True)
class Arg:
    """One ``add_argument`` call: its names and keyword options."""

    names: tuple[str, ...]
    options: Mapping[str, Any]


def arg(*names: str, **options: Any) -> Arg:
    return Arg(names, options)


def flag(name: str, help: str | None = None) -> Arg:
    """A switch that is off unless given."""
    return arg(name, action="store_true", help=help)


@dataclass(frozen=True)
class OneOf:
    """Options of which exactly one must be given (a required mutually exclusive group), or
    at most one when not ``required``."""

    args: tuple[Arg, ...]
    required: bool = True


@dataclass(frozen=True)
class Entry:
    """What the help shows of a command or a group: its ``name`` and line of ``help`` in the
    list above it, and its own page's ``description`` (``raw`` keeps its own line breaks)."""

    name: str
    help: str = field(kw_only=True)
    description: str | None = field(default=None, kw_only=True)
    raw: bool = field(default=False, kw_only=True)


@dataclass(frozen=True)
class Command(Entry):
    """A command that runs ``func``, with options ``args`` and fixed ``defaults``."""

    func: Handler
    args: tuple[Arg | OneOf, ...] = ()
    defaults: Mapping[str, Any] = field(default_factory=dict)
    # A ``nargs="*"`` positional whose values may also come after the options (``produce
    # clicks --partition 0 a.log``): argparse gives it its empty match at once (CPython
    # bpo-15112, in 3.11), and ``place_trailing`` hands it the values left over.
    trailing: str | None = None


@dataclass(frozen=True)
class Group(Entry):
    """A command whose first argument is an ACTION: ``tierflow keys add``, ...; ``dest``
    names the attribute the action is parsed into."""

    dest: str = field(kw_only=True)
    commands: tuple[Command | Group, ...] = field(kw_only=True)


def add_commands(sub: argparse._SubParsersAction, commands: Iterable[Command | Group]) -> None:
    """Add each command (or group of actions) to ``sub``, in the order given (the help's)."""
    for command in commands:
        if isinstance(command, Group):
            parser = _add_parser(sub, command)
            actions = parser.add_subparsers(dest=command.dest, required=True, metavar="ACTION")
            add_commands(actions, command.commands)
        else:
            _add_command(sub, command)


def _add_command(sub: argparse._SubParsersAction, command: Command) -> None:
    parser = _add_parser(sub, command)
    for item in command.args:
        if isinstance(item, OneOf):
            group = parser.add_mutually_exclusive_group(required=item.required)
            for one in item.args:
                group.add_argument(*one.names, **one.options)
        else:
            parser.add_argument(*item.names, **item.options)
    parser.set_defaults(func=command.func, **command.defaults)
    if command.trailing is not None:
        (positional,) = [
            a for a in command.args if isinstance(a, Arg) and a.names[0] == command.trailing
        ]
        parser.set_defaults(**{TRAILING: (command.trailing, positional.options.get("type", str))})


TRAILING = "_trailing_positional"


def place_trailing(
    parser: argparse.ArgumentParser, args: argparse.Namespace, extras: list[str]
) -> argparse.Namespace:
    """``parse_known_args``'s leftovers: the values of the command's trailing positional, or
    the same error ``parse_args`` gives for arguments nobody takes."""
    dest, convert = getattr(args, TRAILING, (None, str))
    values = [extra for extra in extras if not extra.startswith("-")] if dest else []
    unknown = [extra for extra in extras if extra not in values]
    if unknown:
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    if dest:
        getattr(args, dest).extend(convert(value) for value in values)
    return args


def _add_parser(sub: argparse._SubParsersAction, entry: Entry) -> argparse.ArgumentParser:
    formatter = argparse.RawDescriptionHelpFormatter if entry.raw else argparse.HelpFormatter
    return sub.add_parser(
        entry.name, help=entry.help, description=entry.description, formatter_class=formatter
    )
