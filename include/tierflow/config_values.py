"""The kinds of value a TIERFLOW_* variable holds, each read from its text exactly one way.

pydantic would take more spellings than we document ("1.0" as a whole number, "y" as true);
these validators take what the README says and reject the rest with a reason. The few
values with structure (TIERFLOW_BROKERS, TIERFLOW_BROKER_QUEUES) are parsed here too, with
errors that name the entry at fault.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, BeforeValidator, Field

VARIABLE_PREFIX = "TIERFLOW_"
BROKERS = "TIERFLOW_BROKERS"
BROKER_QUEUES = "TIERFLOW_BROKER_QUEUES"
_MAX_BROKER_ID = 2**31 - 1  # node.id is an int32


class InvalidSettingError(ValueError):
    pass


@dataclass(frozen=True)
class BrokerSpec:
    """One broker of TIERFLOW_BROKERS: its id (Kafka's node.id / broker.id) and its log.dirs."""

    broker_id: int
    log_dirs: tuple[Path, ...]


def parse_brokers(raw: str) -> tuple[BrokerSpec, ...]:
    """``1=/a:/b,2=/c`` -> one BrokerSpec per broker; a bad entry is named in the error."""
    brokers: list[BrokerSpec] = []
    owner: dict[Path, int] = {}
    for entry in raw.split(","):
        spec = _broker_entry(entry.strip())
        if any(b.broker_id == spec.broker_id for b in brokers):
            raise InvalidSettingError(f"{BROKERS}: broker {spec.broker_id} is given twice")
        for path in spec.log_dirs:
            if path in owner:
                raise InvalidSettingError(
                    f"{BROKERS}: log dir {path} is given for brokers {owner[path]} "
                    f"and {spec.broker_id}"
                )
            owner[path] = spec.broker_id
        brokers.append(spec)
    return tuple(brokers)


def _broker_entry(entry: str) -> BrokerSpec:
    broker, sep, dirs = entry.partition("=")
    expected = f"expected <broker id>=<log dir>[{os.pathsep}<log dir>...]"
    if not sep:
        raise InvalidSettingError(f"{BROKERS} entry {entry!r}: {expected}")
    try:
        broker_id = int(broker.strip())
    except ValueError:
        raise InvalidSettingError(
            f"{BROKERS} entry {entry!r}: broker id {broker.strip()!r} is not a whole number"
        ) from None
    if not 0 <= broker_id <= _MAX_BROKER_ID:
        raise InvalidSettingError(
            f"{BROKERS} entry {entry!r}: broker id must be 0 to {_MAX_BROKER_ID}"
        )
    paths = tuple(Path(p.strip()).resolve() for p in dirs.split(os.pathsep) if p.strip())
    if not paths:
        raise InvalidSettingError(f"{BROKERS} entry {entry!r}: no log dir; {expected}")
    return BrokerSpec(broker_id, paths)


def brokers_text(brokers: tuple[BrokerSpec, ...]) -> str:
    """The TIERFLOW_BROKERS text of ``brokers``; parse_brokers reads it back."""
    return ",".join(f"{b.broker_id}={os.pathsep.join(str(p) for p in b.log_dirs)}" for b in brokers)


def parse_broker_queues(raw: str) -> dict[int, str]:
    """``1=kafka-broker-1,2=kafka-broker-2`` -> broker id -> Airflow queue."""
    queues: dict[int, str] = {}
    for entry in filter(None, (e.strip() for e in raw.split(","))):
        broker, _, queue = entry.partition("=")
        if not broker.strip().isdigit() or not re.fullmatch(r"[\w.-]+", queue.strip()):
            raise InvalidSettingError(
                f"{BROKER_QUEUES} entry {entry!r}: expected BROKER_ID=QUEUE, e.g. 1=kafka-broker-1"
            )
        queues[int(broker)] = queue.strip()
    return queues


def broker_queues_text(queues: tuple[tuple[int, str], ...]) -> str:
    return ",".join(f"{broker}={queue}" for broker, queue in queues)


def _queue_pairs(raw: object) -> object:
    """Held as sorted (broker, queue) pairs: settings are hashable (processes cache on them)."""
    if isinstance(raw, str):
        raw = parse_broker_queues(raw)
    return tuple(sorted(raw.items())) if isinstance(raw, dict) else raw


def paths_text(paths: tuple[Path, ...]) -> str:
    return os.pathsep.join(str(p) for p in paths)


def _flag(raw: object) -> object:
    """The spellings of a boolean variable: exactly these, not all that pydantic would take."""
    if isinstance(raw, str):
        if raw.lower() in ("true", "1", "yes", "on"):
            return True
        if raw.lower() in ("false", "0", "no", "off"):
            return False
        raise ValueError("expected true or false")
    return raw


def _whole(raw: object) -> object:
    """A whole number as int() reads it: "1.0" is not one, though pydantic would take it."""
    if isinstance(raw, str):
        try:
            return int(raw)
        except ValueError:
            raise ValueError("expected a whole number") from None
    return raw


def _paths(raw: object) -> object:
    """``/a:/b`` (os.pathsep-separated) -> paths; empty parts are skipped."""
    if isinstance(raw, str):
        return tuple(Path(p) for p in raw.split(os.pathsep) if p)
    return raw


def _parsed(parse):
    return BeforeValidator(lambda raw: parse(raw) if isinstance(raw, str) else raw)


def _resolved(paths: tuple[Path, ...]) -> tuple[Path, ...]:
    return tuple(p.resolve() for p in paths)


def _resolved_brokers(brokers: tuple[BrokerSpec, ...]) -> tuple[BrokerSpec, ...]:
    """Brokers given as values, not text, resolve too: TIERFLOW_LOG_DIRS (resolved) is
    compared with their dirs, and a symlinked dir must equal itself."""
    return tuple(BrokerSpec(b.broker_id, _resolved(b.log_dirs)) for b in brokers)


Flag = Annotated[bool, BeforeValidator(_flag)]
Whole = Annotated[int, BeforeValidator(_whole)]
Count = Annotated[Whole, Field(ge=0)]
Positive = Annotated[Whole, Field(ge=1)]
# Paths are resolved against the working directory of whoever reads the variable.
ResolvedPath = Annotated[Path, AfterValidator(Path.resolve)]
ResolvedPaths = Annotated[tuple[Path, ...], BeforeValidator(_paths), AfterValidator(_resolved)]
Brokers = Annotated[
    tuple[BrokerSpec, ...], _parsed(parse_brokers), AfterValidator(_resolved_brokers)
]
BrokerQueues = Annotated[tuple[tuple[int, str], ...], BeforeValidator(_queue_pairs)]
