"""Every command that takes settings, under each broken setting, ends in one line on stderr and
no traceback (issue 16): the commands are read from the parser, so a new one is covered too."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import tierflow.cli.app as cli
from tests.support.cli_commands import minimal_argv
from tierflow.cli import READS_STORE_ONLY, build_parser, main
from tierflow.cli.exit_codes import BROKEN_PIPE, EXIT_CODES, INTERRUPTED, NOT_FOUND, USAGE

ROOT = Path(__file__).resolve().parents[3]

# Commands that read no settings, or that start a demo, a server or Airflow.
NO_SETTINGS = {"demo", "diskless demo", "keys generate", "airflow"}


def leaf_commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator:
    """Each runnable command: its words and its parser."""
    groups = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not groups:
        yield path, parser
        return
    for name, child in groups[0].choices.items():
        yield from leaf_commands(child, (*path, name))


def commands_with_settings(tmp: Path) -> list[tuple[str, list[str], bool]]:
    """(name, argv, reads the store only) of every command that takes settings."""
    found = []
    for words, parser in leaf_commands(build_parser()):
        name = " ".join(words)
        if name in NO_SETTINGS or words[0] in NO_SETTINGS:
            continue
        read_only = parser.get_default("func") in READS_STORE_ONLY
        found.append((name, minimal_argv(words, parser, tmp), read_only))
    return found


def broken(setting: str, tmp: Path, slug: str) -> dict[str, str]:
    bucket_file = tmp / "bucket-is-a-file"
    bucket_file.write_text("not a directory")
    return {
        "missing log dir": {"TIERFLOW_LOG_DIRS": str(tmp / "no" / "logs")},
        "bad chunk size": {"TIERFLOW_CHUNK_SIZE": "lots"},
        "store in a missing dir": {"TIERFLOW_DB_URL": f"sqlite:///{tmp}/no/{slug}/tierflow.db"},
        "bucket is a file": {"TIERFLOW_REMOTE_STORAGE": str(bucket_file)},
    }[setting]


SETTINGS = ("missing log dir", "bad chunk size", "store in a missing dir", "bucket is a file")


def working_settings(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Settings that work: a store with the schema, an empty log dir and bucket."""
    for name in [n for n in os.environ if n.startswith("TIERFLOW_")]:
        monkeypatch.delenv(name)
    (tmp / "logs").mkdir()
    (tmp / "input.log").write_bytes(b"")
    monkeypatch.setenv("TIERFLOW_DATA_DIR", str(tmp / "data"))
    monkeypatch.setenv("TIERFLOW_LOG_DIRS", str(tmp / "logs"))
    monkeypatch.setenv("TIERFLOW_DB_URL", f"sqlite:///{tmp}/store.db")
    assert main(["db", "upgrade"]) == 0


@pytest.mark.parametrize("setting", SETTINGS)
def test_every_command_fails_in_one_line(
    setting: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    working_settings(tmp_path, monkeypatch)
    failures = []
    for name, argv, read_only in commands_with_settings(tmp_path):
        slug = name.replace(" ", "-")
        with monkeypatch.context() as env:
            for key, value in broken(setting, tmp_path, slug).items():
                env.setenv(key, value)
            capsys.readouterr()
            code = main(argv)
        err = capsys.readouterr().err
        failures += judged(name, code, err, setting, read_only)
        if read_only and (tmp_path / "no" / slug).exists():
            failures.append(f"{name} only reads, yet created {tmp_path / 'no' / slug}")
    assert not failures, "\n".join(failures)


def judged(name: str, code: int, err: str, setting: str, read_only: bool) -> list[str]:
    """What is wrong with one outcome: a traceback, a failure in more (or less) than one
    line, or success where the broken setting must stop the command."""
    must_fail = setting == "bad chunk size" or (read_only and "store" in setting)
    if "Traceback" in err or (code != 0 and len(err.splitlines()) != 1):
        return [f"{name}: exit {code}: {err!r}"]
    if must_fail and code == 0:
        return [f"{name}: exit 0 despite {setting}"]
    if read_only and "store" in setting and code != NOT_FOUND:
        return [f"{name}: exit {code}, not {NOT_FOUND} for a missing store: {err!r}"]
    return []


def test_exit_codes_are_distinct() -> None:
    codes = [code for _, code in EXIT_CODES] + [INTERRUPTED, BROKEN_PIPE]
    assert len(codes) == len(set(codes)) and 0 not in codes and USAGE == 2


def test_reader_closing_the_pipe_ends_quietly(tmp_path: Path) -> None:
    """`tierflow status --json | head -c1`: the reader is gone before the first write."""
    env = {**os.environ, "TIERFLOW_DATA_DIR": str(tmp_path), "PYTHONPATH": str(ROOT / "include")}
    command = [sys.executable, "-m", "tierflow.cli"]
    subprocess.run([*command, "db", "upgrade"], env=env, check=True, capture_output=True)
    for argv in (["status", "--json"], ["topics", "list"]):
        run = subprocess.Popen(
            [*command, *argv], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        run.stdout.close()  # before the interpreter has even imported tierflow
        err = run.stderr.read().decode()
        assert run.wait() == BROKEN_PIPE and err == "", (argv, err)


def test_ctrl_c_is_one_line(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    def interrupted(_db_url: str) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "require_existing_store", interrupted)
    assert main(["events"]) == INTERRUPTED
    assert capsys.readouterr().err == "tierflow: interrupted\n"


def test_read_only_command_never_creates_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.delenv("TIERFLOW_DB_URL", raising=False)
    monkeypatch.setenv("TIERFLOW_DATA_DIR", str(tmp_path / "data"))
    assert main(["status"]) == NOT_FOUND
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(tmp_path / "data" / "tierflow.db") in err
    assert not (tmp_path / "data").exists()


def test_verbose_keeps_the_traceback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIERFLOW_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("TIERFLOW_LOG_DIRS", str(tmp_path / "missing"))
    monkeypatch.delenv("TIERFLOW_DB_URL", raising=False)
    with pytest.raises(FileNotFoundError, match="log directory does not exist"):
        main(["-v", "copy"])


def test_version(capsys) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.startswith("tierflow ")
