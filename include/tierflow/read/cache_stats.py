"""The counters every read-path cache keeps, so each cache adds only the ones of its own.

Hits, misses and evictions are what Kafka's RemoteIndexCache reports (KIP-958 names them for
the index cache); the chunk cache counts the same three for its chunks.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class CacheStats:
    """How often a lookup found its entry, had to load it, and pushed another out."""

    hits: int = 0
    misses: int = 0
    evictions: int = 0
