"""The page's tables as data: each row's data-* attributes and its cells by data-field."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser


@dataclass
class Cell:
    attrs: dict[str, str]
    text: str = ""


@dataclass
class Row:
    attrs: dict[str, str]
    cells: dict[str, Cell] = field(default_factory=dict)

    def value(self, name: str) -> str:
        return self.cells[name].attrs["data-value"]


class _Tables(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[Row]] = {}
        self.table: str | None = None
        self.row: Row | None = None
        self.cell: Cell | None = None
        self.links: list[dict[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {k: v or "" for k, v in attrs}
        if tag == "table":
            self.table = found.get("id", "")
            self.tables[self.table] = []
        elif tag == "tr" and self.table is not None:
            self.row = Row(found)
        elif tag == "td" and self.row is not None:
            self.cell = Cell(found)
            if "data-field" in found:
                self.row.cells[found["data-field"]] = self.cell
        elif tag == "a":
            self.links.append(found)

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self.table = None
        elif tag == "tr" and self.row is not None and self.table is not None:
            if self.row.cells:
                self.tables[self.table].append(self.row)
            self.row = None
        elif tag == "td":
            self.cell = None

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell.text += data


def parse(html: str) -> tuple[dict[str, list[Row]], list[dict[str, str]]]:
    """Tables by id (rows with figure cells only), and every link's attributes."""
    parser = _Tables()
    parser.feed(html)
    return parser.tables, parser.links


@dataclass
class Accessibility:
    """What a screen reader needs of the page's tables and form."""

    tables: dict[str, dict[str, str]] = field(default_factory=dict)  # id -> attributes
    headers: list[dict[str, str]] = field(default_factory=list)  # every <th>
    captions: set[str] = field(default_factory=set)  # ids of tables with a <caption>
    controls: list[dict[str, str]] = field(default_factory=list)  # input, select, textarea
    label_for: set[str] = field(default_factory=set)  # ids named by a <label for>


class _Accessibility(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found = Accessibility()
        self.table: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {k: v or "" for k, v in attrs}
        if tag == "table":
            self.table = found.get("id", "")
            self.found.tables[self.table] = found
        elif tag == "caption" and self.table is not None:
            self.found.captions.add(self.table)
        elif tag == "th":
            self.found.headers.append(found)
        elif tag in ("input", "select", "textarea") and found.get("type") != "hidden":
            self.found.controls.append(found)
        elif tag == "label" and "for" in found:
            self.found.label_for.add(found["for"])


def accessibility(html: str) -> Accessibility:
    parser = _Accessibility()
    parser.feed(html)
    return parser.found
