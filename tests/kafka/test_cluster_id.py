"""The test brokers' cluster ids follow Kafka's rule: 16 random bytes in URL-safe base64, never
starting with '-' (kafka-storage format reads such an id as an option and refuses it)."""

from __future__ import annotations

import base64

from dev.kafka_broker import new_cluster_id


def test_cluster_ids_are_kafka_uuids_that_never_start_with_a_dash() -> None:
    ids = [new_cluster_id() for _ in range(4_000)]  # 1 in 64 started with '-' before the rule
    assert not [cluster_id for cluster_id in ids if cluster_id.startswith("-")]
    assert all(len(base64.urlsafe_b64decode(cluster_id + "==")) == 16 for cluster_id in ids)
    assert len(set(ids)) == len(ids)
