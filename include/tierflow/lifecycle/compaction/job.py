"""One partition's compaction job and what became of each of its groups, as JSON-able values.

Airflow records each group's new segment COPY_SEGMENT_STARTED first (``swap.prepare``) and
writes the job to the batch's jobs file; Spark or the engine's processes run it
(``passes``), and finalize turns the results into state. A group the compaction would not
change is not written at all ("unchanged"), nor is one from which every record goes ("empty").
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from tierflow.rsm import ObjectInfo, RemoteSegment

WRITTEN, UNCHANGED, EMPTY, FAILED = "written", "unchanged", "empty", "failed"


@dataclass(frozen=True)
class CompactionGroup:
    """A new segment (recorded STARTED) and the consecutive source segments it replaces."""

    target: RemoteSegment
    sources: tuple[RemoteSegment, ...]
    source_bytes: int  # the sources' sizes, as recorded

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: dict) -> CompactionGroup:
        sources = tuple(RemoteSegment(**s) for s in raw["sources"])
        return cls(RemoteSegment(**raw["target"]), sources, int(raw["source_bytes"]))


@dataclass(frozen=True)
class CompactionJob:
    topic: str
    topic_id: str
    partition: int
    groups: tuple[CompactionGroup, ...]
    tombstone_horizon_ms: int  # tombstones older than this go (now - delete.retention.ms)
    segment_bytes: int
    # Later tiered segments with a .txnindex: an ABORT marker after the range may abort
    # records in it (a transaction open at the tiered log's end cuts the range instead).
    later: tuple[RemoteSegment, ...] = ()

    @property
    def source_bytes(self) -> int:
        return sum(group.source_bytes for group in self.groups)

    @property
    def size_in_bytes(self) -> int:
        """What the batch is sized by: the sources' bytes."""
        return self.source_bytes

    @property
    def sources(self) -> list[RemoteSegment]:
        return [s for g in self.groups for s in g.sources]

    def as_dict(self) -> dict:
        return asdict(self)  # nested segments and groups as plain dicts, for JSON

    @classmethod
    def from_dict(cls, raw: dict) -> CompactionJob:
        groups = tuple(CompactionGroup.from_dict(g) for g in raw["groups"])
        later = tuple(RemoteSegment(**s) for s in raw.get("later", ()))
        return cls(**{**raw, "groups": groups, "later": later})


@dataclass(frozen=True)
class CompactionResult:
    """What became of one group: its new segment written (with the objects to verify, the
    size and largest timestamp it turned out to have), not needed, or failed."""

    segment_id: str
    outcome: str
    objects: list[ObjectInfo] = field(default_factory=list)
    size_in_bytes: int = 0
    max_timestamp_ms: int = -1
    error: str | None = None

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: dict) -> CompactionResult:
        return cls(**{**raw, "objects": [ObjectInfo(**o) for o in raw["objects"]]})
