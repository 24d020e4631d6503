"""The brokers tierflow reads: TIERFLOW_BROKERS, or TIERFLOW_LOG_DIRS as one broker.

A single broker's id comes from ``meta.properties`` in its log dirs (``node.id`` on KRaft,
``broker.id`` on ZooKeeper brokers), the file every broker writes at the root of each log dir.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tierflow.config import Settings
from tierflow.kafka.log_dir import LogDir
from tierflow.kafka.meta_properties import META_PROPERTIES, NODE_ID_KEYS, read_properties

# A log dir without meta.properties (a test, a copy of partition dirs): broker 0.
DEFAULT_BROKER_ID = 0


class BrokerIdError(ValueError):
    """The log dirs of one broker disagree on its id, or the id is not a number."""


@dataclass(frozen=True)
class Broker:
    broker_id: int
    log_dirs: tuple[Path, ...]


class SnapshotLogDir(LogDir):
    """A LogDir that reads each root checkpoint once.

    ``LogDir.checkpoint`` re-reads the whole file on every call, so asking 10,000 partitions
    for their high watermark would read it 10,000 times. One planning pass wants one
    consistent view anyway: the checkpoints as they were when it first looked.
    """

    def __init__(self, path: str | Path) -> None:
        super().__init__(path)
        self._checkpoints: dict[str, dict[tuple[str, int], int]] = {}

    def __repr__(self) -> str:
        return f"SnapshotLogDir({str(self.path)!r})"

    def checkpoint(self, name: str) -> dict[tuple[str, int], int]:
        if name not in self._checkpoints:
            self._checkpoints[name] = super().checkpoint(name)
        return self._checkpoints[name]


def cluster_brokers(settings: Settings) -> list[Broker]:
    """The configured brokers by id; without TIERFLOW_BROKERS, one over settings.log_dirs."""
    if not settings.cluster.brokers:
        dirs = tuple(settings.log_dirs)
        found = meta_broker_id(dirs)
        return [Broker(DEFAULT_BROKER_ID if found is None else found, dirs)]
    brokers = []
    for spec in settings.cluster.brokers:
        found = meta_broker_id(spec.log_dirs)
        if found is not None and found != spec.broker_id:
            raise BrokerIdError(
                f"TIERFLOW_BROKERS gives broker {spec.broker_id} the log dirs "
                f"{', '.join(map(str, spec.log_dirs))}, but their {META_PROPERTIES} says "
                f"broker {found}"
            )
        brokers.append(Broker(spec.broker_id, spec.log_dirs))
    return sorted(brokers, key=lambda b: b.broker_id)


def meta_broker_id(log_dirs: tuple[Path, ...]) -> int | None:
    """``node.id`` (else ``broker.id``) from the dirs' meta.properties; None when none has."""
    found: dict[int, Path] = {}
    for path in log_dirs:
        broker_id = _meta_broker_id(Path(path) / META_PROPERTIES)
        if broker_id is not None:
            found.setdefault(broker_id, Path(path))
    if len(found) > 1:
        (a, path_a), (b, path_b) = list(found.items())[:2]
        raise BrokerIdError(
            f"the log dirs are of different brokers: {path_a} is broker {a}, {path_b} is "
            f"broker {b}; give each broker its own entry in TIERFLOW_BROKERS"
        )
    return next(iter(found), None)


def _meta_broker_id(path: Path) -> int | None:
    if not path.is_file():
        return None
    properties = read_properties(path)
    for key in NODE_ID_KEYS:
        raw = properties.get(key)
        if raw is not None:
            try:
                return int(raw)
            except ValueError:
                raise BrokerIdError(f"{path}: {key}={raw!r} is not a broker id") from None
    return None
