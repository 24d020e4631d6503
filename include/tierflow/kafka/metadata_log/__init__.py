"""The KRaft metadata log (``__cluster_metadata-0``) read offline: topics, partitions, configs.

``find_metadata_image(log_dirs)`` is what the rest of tierflow calls; see ``reader`` for how
the snapshot and the log are replayed, ``replay`` for Kafka's rules per record type.
"""

from tierflow.kafka.metadata_log.image import (
    BrokerImage,
    MetadataImage,
    PartitionImage,
    TopicImage,
)
from tierflow.kafka.metadata_log.reader import (
    METADATA_PARTITION_DIR,
    find_metadata_image,
    read_metadata_log,
)

__all__ = [
    "METADATA_PARTITION_DIR",
    "BrokerImage",
    "MetadataImage",
    "PartitionImage",
    "TopicImage",
    "find_metadata_image",
    "read_metadata_log",
]
