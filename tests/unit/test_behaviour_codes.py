"""Every Kafka behaviour code the code cites (E6, M7, L1-L7...) is defined in the docs.

Docstrings and comments cite Kafka's tiered-storage behaviours by short codes; the definitions
live in docs/kafka-behaviours.md under an anchor that is the code in lower case. A citation
without an entry there, or a module that cites codes without saying where they are defined,
fails here, and so does a bare section reference (a section sign), which pointed to notes
outside the repository.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("include", "dags", "spark_apps", "plugins")
DOC = ROOT / "docs" / "kafka-behaviours.md"
DOC_PATH = "docs/kafka-behaviours.md"

# The letters are the reference's areas: T tasks, C copy, L local retention, E expiration,
# D disablement, R reads, I index cache, M metadata. "E5a" is a step of E5; "L1-L7" a range.
CODE = re.compile(r"\b([TCLEDRIM])(\d{1,2})[a-g]?(?:-\1?(\d{1,2}))?\b")
ANCHOR = re.compile(r'<a id="([a-z]\d{1,2})"></a>')


def _sources() -> list[Path]:
    return sorted(p for d in SCANNED if (ROOT / d).is_dir() for p in (ROOT / d).rglob("*.py"))


def _codes(text: str) -> set[str]:
    """The codes cited in ``text``, ranges expanded, step letters dropped, lower case."""
    found: set[str] = set()
    for letter, first, last in CODE.findall(text):
        for number in range(int(first), int(last or first) + 1):
            found.add(f"{letter.lower()}{number}")
    return found


def test_codes_are_parsed_as_cited() -> None:
    assert _codes("(E5a, E5g) L1-L7 M4-M9 D4/D6 S3 X11") == {
        "e5",
        *(f"l{n}" for n in range(1, 8)),
        *(f"m{n}" for n in range(4, 10)),
        "d4",
        "d6",
    }


def test_every_cited_code_has_an_anchor() -> None:
    anchors = set(ANCHOR.findall(DOC.read_text(encoding="utf-8")))
    missing = {
        f"{path.relative_to(ROOT)}: {code.upper()}"
        for path in _sources()
        for code in _codes(path.read_text(encoding="utf-8")) - anchors
    }
    assert not missing, f"codes without an entry in {DOC_PATH}: {sorted(missing)}"


def test_modules_citing_codes_point_to_the_doc() -> None:
    silent = [
        str(path.relative_to(ROOT))
        for path in _sources()
        if _codes(text := path.read_text(encoding="utf-8")) and DOC_PATH not in text
    ]
    assert not silent, f"modules citing codes without naming {DOC_PATH}: {silent}"


def test_no_section_references_to_outside_notes() -> None:
    cited = [str(p.relative_to(ROOT)) for p in _sources() if "§" in p.read_text(encoding="utf-8")]
    assert not cited, f"section references to notes outside the repository: {cited}"
