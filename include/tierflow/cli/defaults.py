"""The library's values that the commands' options offer or default to, copied here so that
building the parser imports none of the modules that define them: each of those loads the
metadata store's models, the diskless coordinator or cryptography with it.

tests/unit/cli/test_cli_imports.py checks that each is still the library's value.
"""

from __future__ import annotations

# tierflow.metadata.states.RemoteLogSegmentState: Kafka's remote segment states, in its order.
SEGMENT_STATES = (
    "COPY_SEGMENT_STARTED",
    "COPY_SEGMENT_FINISHED",
    "DELETE_SEGMENT_STARTED",
    "DELETE_SEGMENT_FINISHED",
)

# tierflow.transform.keyring: the ring file's name, and the smallest RSA key it takes.
KEYRING_FILE = "keyring.json"
MIN_BITS = 2048

# tierflow.diskless: Kafka's log.segment.bytes default (merge_plan) and the values of
# message.timestamp.type (models), the default first.
KAFKA_SEGMENT_BYTES = 1 << 30
TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")

# tierflow.lifecycle.remote_log_metadata.publish.CHUNK: records per produce round.
PUBLISH_CHUNK = 1000
