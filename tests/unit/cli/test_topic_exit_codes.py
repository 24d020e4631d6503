"""``--topic`` exits as the README's exit-code table says: a topic that does not exist is not
found (3) on every command that takes ``--topic``, in one line naming it, whichever way the
command turns the store's error into its own (``as_command_error``). In-process, as
``tierflow`` calls ``main``; tests/cli/test_topic_exit_codes.py runs the installed script."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli_commands import ALL, minimal_argv
from tests.support.settings_env import use_settings
from tests.support.tiered import Tiered, build_tiered
from tierflow.cli import main
from tierflow.cli.common import CommandError, as_command_error
from tierflow.cli.exit_codes import NOT_FOUND, USAGE, exit_code_for
from tierflow.metadata.errors import MetadataError, UnknownTopicError

UNKNOWN = "no-such-topic"

# Commands whose --topic is not a selection: the topic a --segment-id must belong to.
NOT_A_SELECTION = {("dump-segment",)}


def topic_commands() -> dict[str, list[str]]:
    """Every command with a --topic option, read from the parser (a new one is covered too),
    as its argv naming the unknown topic; its other required arguments as placeholders."""
    found = {}
    for path, parser, _help in ALL:
        options = {o for action in parser._actions for o in action.option_strings}
        if path in NOT_A_SELECTION or "--topic" not in options:
            continue
        argv = minimal_argv(path, parser, Path("unused"))
        if "--topic" in argv:
            argv[argv.index("--topic") + 1] = UNKNOWN
        else:
            argv += ["--topic", UNKNOWN]
        found[" ".join(path)] = argv
    return found


TOPIC_COMMANDS = topic_commands()


def test_the_commands_are_read_from_the_parser() -> None:
    assert {"copy", "status", "compact", "export iceberg", "rewrap-keys"} <= set(TOPIC_COMMANDS)


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Tiered:
    """Registered topics; the chunked layout with a key ring, so that rewrap-keys gets as far
    as the topic. Shared: a run that finds no topic changes nothing."""
    return build_tiered(tmp_path_factory.mktemp("topics"), layout="chunked-encrypted")


@pytest.mark.parametrize("name", sorted(TOPIC_COMMANDS))
def test_an_unknown_topic_is_not_found(
    name: str, sandbox: Tiered, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    use_settings(monkeypatch, sandbox.settings)
    code = main(TOPIC_COMMANDS[name])
    err = capsys.readouterr().err.splitlines()
    assert code == NOT_FOUND, (name, code, err)
    assert len(err) == 1 and err[0].startswith("tierflow: error: ") and UNKNOWN in err[0], err


@pytest.mark.parametrize(
    ("cause", "code"),
    [
        (UnknownTopicError("unknown topic 'x'"), NOT_FOUND),
        (FileNotFoundError("no such file: x"), NOT_FOUND),
        (MetadataError("store refused"), USAGE),
        (ValueError("bad value"), USAGE),
    ],
    ids=["unknown topic", "missing file", "store error", "value error"],
)
def test_a_command_error_keeps_a_not_found_cause(cause: Exception, code: int) -> None:
    with pytest.raises(CommandError) as raised, as_command_error(type(cause)):
        raise cause
    assert exit_code_for(raised.value) == code
