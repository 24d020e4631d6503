"""The client side: which producers write to a topic and with which settings.

A real topic is written by a mix of clients: an old non-idempotent one, idempotent services,
and transactional ones. Each sets its own ``compression.type``, which is why one partition
ends up holding batches in several codecs.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from enum import StrEnum

from tierflow.demo.topics import TopicSpec


class ProducerMode(StrEnum):
    PLAIN = "plain"  # enable.idempotence=false: no producer id, no sequence
    IDEMPOTENT = "idempotent"
    TRANSACTIONAL = "transactional"


@dataclass(frozen=True)
class ProducerSpec:
    """One producer client; ids and epochs are what the broker granted it."""

    client_id: str
    mode: ProducerMode
    producer_id: int
    producer_epoch: int
    codec: int
    coordinator_epoch: int = 0  # epoch of its transaction coordinator (markers carry it)
    weight: int = 1  # relative share of the topic's traffic


_MIN_IDEMPOTENT = 2
_TRANSACTIONAL = 2


def topic_producers(topic: TopicSpec, rng: random.Random) -> tuple[ProducerSpec, ...]:
    """Producers of ``topic``; there are enough of them that every listed codec is used."""
    modes = [ProducerMode.PLAIN]
    if topic.transactional:
        modes += [ProducerMode.TRANSACTIONAL] * _TRANSACTIONAL
    idempotent = max(_MIN_IDEMPOTENT, len(topic.codecs) - len(modes))
    modes = [ProducerMode.IDEMPOTENT] * idempotent + modes
    # Kafka hands out producer ids in blocks; any distinct positive ids will do.
    producer_ids = rng.sample(range(1_000, 100_000), len(modes))
    producers = []
    for index, mode in enumerate(modes):
        codec = topic.codecs[index % len(topic.codecs)]
        client_id = f"{topic.name}-{mode.value}-{index}"
        if mode is ProducerMode.PLAIN:
            producers.append(ProducerSpec(client_id, mode, -1, -1, codec, weight=2))
        elif mode is ProducerMode.IDEMPOTENT:
            producers.append(ProducerSpec(client_id, mode, producer_ids[index], 0, codec, weight=3))
        else:
            producers.append(
                ProducerSpec(
                    client_id,
                    mode,
                    producer_ids[index],
                    producer_epoch=rng.randrange(0, 6),
                    codec=codec,
                    coordinator_epoch=rng.randrange(0, 12),
                    weight=2,
                )
            )
    return tuple(producers)
