"""The README's key-ring commands, run exactly as the README prints them."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from tierflow.cli import main

README = Path(__file__).resolve().parents[3] / "README.md"


def readme_key_commands() -> list[str]:
    """The inline `tierflow keys ...` commands of the README's "Keys:" paragraph, in order."""
    paragraph = README.read_text().split("\nKeys: ", 1)[1].split("\n\n", 1)[0]
    text = " ".join(paragraph.split())  # inline code may wrap across lines
    return re.findall(r"`(tierflow keys [^`]+)`", text)


def test_the_readme_shows_how_to_create_and_rotate_a_key_ring() -> None:
    commands = readme_key_commands()
    assert [c.split()[2] for c in commands] == ["generate", "add"]


def test_the_readme_key_commands_run_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TIERFLOW_KEYRING", raising=False)
    for command in readme_key_commands():
        assert main(shlex.split(command)[1:]) == 0, command
    capsys.readouterr()
    ring = json.loads((tmp_path / "keys" / "keyring.json").read_text())
    assert "k2" in json.dumps(ring) and "k1" in json.dumps(ring)
