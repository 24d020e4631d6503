"""Per topic: the partitions' gauges summed, next to the settings that explain them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import fields

from tierflow.lifecycle.retention.local import local_retention_limits
from tierflow.metadata.models import Topic
from tierflow.metrics import TopicMetrics
from tierflow.operator_view.model import TopicView


def topic_views(topics: Sequence[Topic], summed: Mapping[str, TopicMetrics]) -> list[TopicView]:
    """Every given topic, sorted by name, with its partitions' sums (zeros without any)."""
    views = []
    for topic in sorted(topics, key=lambda t: t.name):
        view = TopicView(topic.name)
        if (found := summed.get(topic.name)) is not None:
            for summed_field in fields(TopicMetrics):
                setattr(view, summed_field.name, getattr(found, summed_field.name))
        local_ms, local_bytes, _prefix = local_retention_limits(topic)
        view.topic_id = topic.topic_id
        view.tiered_state = topic.tiered_state
        view.tiered_epoch = topic.tiered_epoch
        view.remote_storage_enable = topic.remote_storage_enable
        view.remote_log_copy_disable = topic.remote_log_copy_disable
        view.remote_log_disable_policy = topic.remote_log_disable_policy
        view.retention_ms = topic.retention_ms
        view.retention_bytes = topic.retention_bytes
        view.local_retention_ms = topic.local_retention_ms
        view.local_retention_bytes = topic.local_retention_bytes
        view.effective_local_retention_ms = local_ms
        view.effective_local_retention_bytes = local_bytes
        views.append(view)
    return views
