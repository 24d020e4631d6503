"""``tierflow --help`` explains every command and option, and every command that only reads
has ``--json`` for scripts."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from tests.support.cli_commands import ALL
from tierflow.cli import main

# The commands that only read: each prints for people, and with --json for scripts.
READ_ONLY = (
    ("topics", "list"),
    ("verify",),
    ("events",),
    ("fetch",),
    ("dump-segment",),
    ("metadata",),
    ("status",),
    ("keys", "list"),
    ("diskless", "fetch"),
    ("diskless", "describe"),
    ("cluster", "describe"),
)


def test_every_command_and_group_is_listed_with_help() -> None:
    missing = [" ".join(path) for path, _parser, listed in ALL if not listed]
    assert missing == []


@pytest.mark.parametrize("path", [p for p, _parser, _help in ALL], ids=" ".join)
def test_every_argument_has_help(path: tuple[str, ...]) -> None:
    parser = next(parser for p, parser, _help in ALL if p == path)
    bare = [
        action.option_strings[0] if action.option_strings else action.dest
        for action in parser._actions
        if not isinstance(action, (argparse._HelpAction, argparse._SubParsersAction))
        and not action.help
    ]
    assert bare == [], f"tierflow {' '.join(path)}: arguments without help"


@pytest.mark.parametrize("path", READ_ONLY, ids=" ".join)
def test_every_read_only_command_has_json(path: tuple[str, ...]) -> None:
    parser = next(parser for p, parser, _help in ALL if p == path)
    options = {option for action in parser._actions for option in action.option_strings}
    assert "--json" in options


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["--version"])
    assert stopped.value.code == 0
    assert capsys.readouterr().out.startswith("tierflow ")


def test_version_loads_no_command(tmp_path) -> None:
    """``tierflow --version`` answers before any command module, or SQLAlchemy, loads."""
    probe = (
        "import sys\n"
        "from tierflow.cli import main\n"
        "try:\n    main(['--version'])\n"
        "except SystemExit as stop:\n    assert stop.code == 0\n"
        "loaded = sorted(m for m in sys.modules if m.startswith(('sqlalchemy', 'tierflow.cli.')))\n"
        "print(loaded)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines() == [done.stdout.splitlines()[0], "['tierflow.cli.version']"]
    assert done.stdout.startswith("tierflow ")
