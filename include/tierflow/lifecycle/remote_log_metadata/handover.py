"""Handing a topic over from tierflow to the brokers: tierflow's copies become the brokers'.

The order keeps exactly one copier at every moment:
1. refuse while tierflow has a copy or delete of the topic in flight (a STARTED segment);
2. mark the topic broker-copied: tierflow starts no copy, expiry or removal of it again;
3. publish every transition still waiting, so the brokers' metadata holds all of tierflow's
   segments before they look;
4. check again that nothing raced in (a copy that began before the mark), then turn
   ``remote.storage.enable=true`` on in Kafka. The brokers' RemoteLogManager then copies
   from after tierflow's highest offset, and local retention drops what tierflow's copies hold.

Each step is idempotent: a hand-over stopped anywhere is finished by running it again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from tierflow.kafka.cluster_metadata import set_topic_configs
from tierflow.kafka.remote_log_metadata.topic import MetadataTopic
from tierflow.lifecycle.remote_log_metadata.publish import PublishReport, publish
from tierflow.metadata.models import BROKER_COPIER
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.metadata.store import MetadataStore

IN_FLIGHT = (S.COPY_SEGMENT_STARTED, S.DELETE_SEGMENT_STARTED)
FINISHED = S.COPY_SEGMENT_FINISHED
ENABLE = {"remote.storage.enable": "true"}


class HandoverRefused(RuntimeError):
    """The topic cannot be handed over now; the message says why and what to do."""


@dataclass(frozen=True)
class HandoverPlan:
    topic: str
    topic_id: str
    copier: str
    # partition -> (segments tierflow copied, highest offset they hold; -1 for none)
    copied: dict[int, tuple[int, int]]
    in_flight: list[str]  # "<partition>: <segment id> <state>" of copies still running
    waiting: int  # transitions not yet on __remote_log_metadata
    configs: dict[str, str] = field(default_factory=dict)  # set on the topic in Kafka

    @property
    def refusal(self) -> str | None:
        if not self.in_flight:
            return None
        return (
            f"topic {self.topic}: {len(self.in_flight)} segment(s) of tierflow's still in "
            f"flight ({', '.join(self.in_flight[:3])}); let the running copy or retention "
            "finish (or run tierflow copy to clean up after a stopped one), then hand over"
        )


def plan_handover(
    store: MetadataStore, name: str, configs: Mapping[str, str] | None = None
) -> HandoverPlan:
    topic = store.topic(name)
    copied, in_flight = {}, []
    for row in store.partitions(topic.topic_id):
        rows = store.segments(topic.topic_id, row.partition, states=[FINISHED, *IN_FLIGHT])
        finished = [s for s in rows if s.state == FINISHED]
        highest = max((s.end_offset for s in finished), default=-1)
        copied[row.partition] = (len(finished), highest)
        in_flight += [
            f"{row.partition}: {s.segment_id} {s.state}" for s in rows if s.state != FINISHED
        ]
    waiting = store.waiting_of(topic.topic_id)
    wanted = {**ENABLE, **(configs or {})}
    return HandoverPlan(
        topic.name, topic.topic_id, topic.copier, copied, in_flight, waiting, wanted
    )


def hand_over(
    store: MetadataStore,
    metadata: MetadataTopic,
    plan: HandoverPlan,
    *,
    actor: str,
    now_ms: int,
) -> PublishReport:
    """Steps 1 to 4 of the module doc; HandoverRefused before any change if step 1 fails,
    and before Kafka's config changes if a copy raced in."""
    if plan.refusal:
        raise HandoverRefused(plan.refusal)
    store.set_copier(plan.topic_id, BROKER_COPIER, actor=actor, now_ms=now_ms)
    report = publish(store, metadata)
    again = plan_handover(store, plan.topic)
    if again.refusal or again.waiting:
        raise HandoverRefused(
            (again.refusal or f"{again.waiting} transition(s) of it not published yet")
            + "; the topic is marked as the brokers' already: run the hand-over again"
        )
    set_topic_configs(metadata.bootstrap, plan.topic, plan.configs)
    return report
