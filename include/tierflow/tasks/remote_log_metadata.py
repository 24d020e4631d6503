"""Task bodies of the remote_log_metadata DAG: publish tierflow's transitions, follow the
brokers'. Each returns a JSON-able report, and says why when it has nothing to do."""

from __future__ import annotations

from dataclasses import asdict

from tierflow.config import Settings
from tierflow.kafka.remote_log_metadata.topic import MetadataTopic
from tierflow.lifecycle.remote_log_metadata.follow import follow
from tierflow.lifecycle.remote_log_metadata.publish import publish
from tierflow.metadata.models import BROKER_COPIER
from tierflow.runtime import open_store


def publish_transitions(settings: Settings) -> dict:
    """Publish what waits, when TIERFLOW_PUBLISH_REMOTE_LOG_METADATA is on."""
    if not settings.cluster.publish_remote_log_metadata or not settings.cluster.bootstrap_servers:
        return {"skipped": "TIERFLOW_PUBLISH_REMOTE_LOG_METADATA is off"}
    store = open_store(settings)
    try:
        return asdict(publish(store, MetadataTopic(settings.cluster.bootstrap_servers)))
    finally:
        store.close()


def follow_brokers(settings: Settings) -> dict:
    """Mirror the brokers' new records, when some topic is theirs and a cluster is set."""
    store = open_store(settings)
    try:
        if not any(t.copier == BROKER_COPIER for t in store.topics()):
            return {"skipped": "no topic is copied by the brokers"}
        if not settings.cluster.bootstrap_servers:
            return {"skipped": "TIERFLOW_KAFKA_BOOTSTRAP is not set"}
        return asdict(follow(store, MetadataTopic(settings.cluster.bootstrap_servers)))
    finally:
        store.close()
