"""The JSON a bucket's client spec travels in (``storage.handover``): the fields that are set,
read back by name, so a field the other side does not know is left out rather than fatal."""

from __future__ import annotations

import json
from dataclasses import asdict, fields
from typing import Any, Self


class JsonFields:
    """``to_json`` and ``from_json`` of a client spec (S3's, Azure's, GCS's: dataclasses)."""

    def to_json(self) -> str:
        found: dict[str, Any] = asdict(self)  # type: ignore[call-overload]
        return json.dumps({k: v for k, v in found.items() if v is not None})

    @classmethod
    def from_json(cls, text: str) -> Self:
        names = {f.name for f in fields(cls)}  # type: ignore[arg-type]
        return cls(**{k: v for k, v in json.loads(text).items() if k in names})
