"""The README's table of TIERFLOW_* variables, written from their declarations in tierflow.config.

``python -m dev.settings_table`` rewrites the table in place; tests/docs/test_settings_table.py
fails while the README and the declarations differ.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tierflow.config import variables

README = Path(__file__).resolve().parents[1] / "README.md"
BEGIN = "<!-- settings: written by python -m dev.settings_table -->"
END = "<!-- settings end -->"


def settings_table() -> str:
    """One row per variable, in declaration order: name, default as shown, meaning."""
    rows = ["| variable | default | meaning |", "| --- | --- | --- |"]
    for v in variables():
        shown = v.shown_default
        shown = shown if shown.startswith(("`", "(")) or shown == "unset" else f"`{shown}`"
        rows.append(f"| `{v.name}` | {shown} | {v.info.description} |")
    return "\n".join(rows)


def readme_table(text: str) -> str:
    """The table between the README's markers."""
    start = text.index(BEGIN) + len(BEGIN)
    return text[start : text.index(END, start)].strip()


def main() -> int:
    text = README.read_text()
    current = readme_table(text)
    README.write_text(text.replace(current, settings_table(), 1))
    print(f"{README.name}: {len(list(variables()))} settings")
    return 0


if __name__ == "__main__":
    sys.exit(main())
