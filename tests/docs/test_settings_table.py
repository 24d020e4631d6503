"""The README's table of settings is the one their declarations give: a setting added, renamed
or re-described in tierflow.config and not in the README (run python -m dev.settings_table)
fails here, and so does a variable the README names that nothing reads."""

from __future__ import annotations

import re
from pathlib import Path

from dev.settings_table import readme_table, settings_table
from tierflow.config import variables
from tierflow.faults import ENV_CRASH_AT, ENV_CRASH_SIGNAL, ENV_CRASH_TRACE

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_table_is_the_declared_one() -> None:
    assert readme_table(README.read_text()) == settings_table()


# Read by the crash tests' fault points, not settings: the README's testing section names them.
FAULT_POINTS = {ENV_CRASH_AT, ENV_CRASH_SIGNAL, ENV_CRASH_TRACE}


def test_every_tierflow_variable_the_readme_names_is_a_setting() -> None:
    """A name ending ``_*`` stands for every setting it begins (TIERFLOW_STORAGE_RETRY_*)."""
    settings = {v.name for v in variables()}
    for name, wildcard in re.findall(r"(TIERFLOW_[A-Z0-9_]*[A-Z0-9])(_\*)?", README.read_text()):
        if wildcard:
            assert any(s.startswith(name + "_") for s in settings), name
        else:
            assert name in settings | FAULT_POINTS, name
