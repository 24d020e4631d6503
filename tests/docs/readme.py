"""The commands README.md shows, parsed from its text, so a command added later is found too.

Three places hold commands: fenced ```bash (or sh) blocks (every line that is not a comment), fenced
blocks with ``$ `` prompts (the prompted lines, followed by the output the README shows), and
inline code in the prose that starts with a program a reader runs (``tierflow ...``,
``make ...``, ``airflow ...``, ``pip ...``, ``python ...``, ``java ...``, ``.venv/bin/python``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"
PROGRAMS = ("tierflow", "make", "airflow", "pip", "python", "java", ".venv/bin/python")
PROMPT = "$ "
SHELLS = ("bash", "sh", "shell", "zsh")  # info strings of blocks whose every line is a command
_COMMENT = re.compile(r"\s+#.*$")
_INLINE = re.compile(r"`([^`]+)`")


@dataclass(frozen=True)
class Block:
    """One fenced block: the heading it sits under, its info string and its lines."""

    heading: str
    info: str
    lines: tuple[str, ...]

    def commands(self) -> list[str]:
        """A bash block's non-comment lines, or a prompted block's prompted lines; each without
        its trailing comment. Other blocks (pictures, output) hold no commands."""
        prompted = [line for line in self.lines if line.startswith(PROMPT)]
        if self.info in SHELLS and not prompted:
            found = [line.strip() for line in self.lines]
            return [_COMMENT.sub("", line) for line in found if line and not line.startswith("#")]
        return [_COMMENT.sub("", line.removeprefix(PROMPT)) for line in prompted]

    def session(self) -> list[tuple[str, str, list[str]]]:
        """A prompted block as (command, its comment, the output shown below it)."""
        steps: list[tuple[str, str, list[str]]] = []
        for line in self.lines:
            if line.startswith(PROMPT):
                text = line.removeprefix(PROMPT)
                comment = text[len(_COMMENT.sub("", text)) :].strip().removeprefix("#").strip()
                steps.append((_COMMENT.sub("", text), comment, []))
            elif steps:
                steps[-1][2].append(line)
        return steps


def readme_text() -> str:
    return README.read_text()


def blocks() -> list[Block]:
    """Every fenced block, indented ones (inside a list item) included."""
    found: list[Block] = []
    heading, info, lines = "", None, []
    for line in readme_text().splitlines():
        stripped = line.strip()
        if info is None and line.startswith("#"):
            heading = line.lstrip("#").strip()
        if not stripped.startswith("```"):
            if info is not None:
                lines.append(line.strip() if info in SHELLS else line)
            continue
        if info is None:
            info, lines = stripped.removeprefix("```"), []
        else:
            found.append(Block(heading, info, tuple(lines)))
            info = None
    return found


def inline_commands() -> list[str]:
    """Inline code in the prose (fenced blocks left out) that starts with a program a reader
    runs, in README order; a span that wraps across lines is joined with single spaces."""
    prose, fenced = [], False
    for line in readme_text().splitlines():
        if line.strip().startswith("```"):
            fenced = not fenced
        elif not fenced:
            prose.append(line)
    spans = _INLINE.findall(" ".join(" ".join(prose).split()))
    return [s for s in spans if s.split(" ", 1)[0] in PROGRAMS and " " in s]


def block_commands() -> list[str]:
    return [command for block in blocks() for command in block.commands()]


def all_commands() -> list[str]:
    """Every command the README shows, each once, in README order (blocks first)."""
    return list(dict.fromkeys([*block_commands(), *inline_commands()]))


def block_under(heading: str, info: str = "bash") -> Block:
    """The one block of kind ``info`` under ``heading``."""
    found = [b for b in blocks() if b.heading == heading and b.info == info]
    assert len(found) == 1, f"README: expected one {info!r} block under {heading!r}: {found}"
    return found[0]


def prompted_blocks() -> list[Block]:
    return [b for b in blocks() if any(line.startswith(PROMPT) for line in b.lines)]


_BOX_RULES = set("─━┏┓┗┛┡┩└┘┳┻╇┴┬┼ ")


def key_lines(shown: list[str]) -> list[str]:
    """The lines of shown output worth comparing: every table's body rows, and whatever is
    printed after the last table (summaries, warnings). Titles and headers are layout."""
    rows: list[str] = []
    in_body, last_table = False, -1
    for number, line in enumerate(shown):
        text = line.strip()
        if text.startswith("│") or (in_body and text):
            rows.append(line)
            last_table = number
        elif text and set(text) <= _BOX_RULES:
            in_body, last_table = text.startswith("─"), number
        elif not text:
            in_body = False
    return rows + [line for line in shown[last_table + 1 :] if line.strip()]
