"""A Progress (tierflow.lifecycle.progress) that remembers what it heard, for the tests of the
operations that report to one."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class HeardProgress:
    segments_total: int = 0
    bytes_total: int = 0
    segments_done: int = 0
    bytes_done: int = 0
    notes: list[str] = field(default_factory=list)

    def add_total(self, segments: int = 0, bytes: int = 0) -> None:
        self.segments_total += segments
        self.bytes_total += bytes

    def advance(self, segments: int = 0, bytes: int = 0) -> None:
        self.segments_done += segments
        self.bytes_done += bytes

    def note(self, label: str) -> None:
        self.notes.append(label)

    @property
    def totals(self) -> tuple[int, int]:
        return self.segments_total, self.bytes_total

    @property
    def done(self) -> tuple[int, int]:
        return self.segments_done, self.bytes_done
