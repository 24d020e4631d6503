"""``meta.properties``, the file a broker writes at the root of each log dir: which node it
belongs to (``node.id`` on KRaft, ``broker.id`` on ZooKeeper brokers) and its cluster id."""

from __future__ import annotations

from pathlib import Path

META_PROPERTIES = "meta.properties"
NODE_ID_KEYS = ("node.id", "broker.id")


def read_properties(path: Path) -> dict[str, str]:
    """Java Properties text as Kafka writes meta.properties: ``key=value``, ``#`` comments.

    Enough for what brokers write there (no line continuations or escapes in ids).
    """
    properties: dict[str, str] = {}
    for raw in path.read_text(encoding="latin-1").splitlines():
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        cut = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
        key, value = (line[:cut], line[cut + 1 :]) if cut >= 0 else (line, "")
        properties[key.strip()] = value.strip()
    return properties


def log_dir_properties(log_dir: Path) -> dict[str, str]:
    """The log dir's meta.properties; empty when it has none (not a broker's, or never used)."""
    path = Path(log_dir) / META_PROPERTIES
    return read_properties(path) if path.is_file() else {}
