"""What the commands' work shares that needs the library: the console, the errors every
command reports in one line, the leader replicas that copy and verify read.

Only modules of a command's work import it (never a command table), so that building the
parser loads none of this.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tierflow.cli.common import as_command_error
from tierflow.cli.console import stdout_console
from tierflow.cluster.brokers import BrokerIdError
from tierflow.cluster.leaders import leader_logs
from tierflow.cluster.replicas import DuplicateReplicaError
from tierflow.config import Settings
from tierflow.kafka.cluster_metadata import ClusterMetadataError
from tierflow.kafka.errors import KafkaFormatError
from tierflow.lifecycle.copy.lease import PartitionBusyError
from tierflow.lifecycle.copy.plan import CopyFailedError, TopicIdMismatchError
from tierflow.metadata.errors import InvalidConfigError, UnknownTopicError
from tierflow.rsm import RemoteStorageError
from tierflow.runtime import UnknownPartitionError

if TYPE_CHECKING:
    from tierflow.kafka.log_dir import PartitionLog

console = stdout_console()

KNOWN_ERRORS = (
    KafkaFormatError,
    InvalidConfigError,
    UnknownTopicError,
    UnknownPartitionError,
    RemoteStorageError,
    PartitionBusyError,
    TopicIdMismatchError,
    CopyFailedError,
    FileNotFoundError,
)


def settings_from_env() -> Settings:
    return Settings.from_env()


# What reading the brokers' leaders may raise that the operator fixes (settings, log dirs).
CLUSTER_ERRORS = (ClusterMetadataError, BrokerIdError, DuplicateReplicaError)


def leader_partition_logs(settings: Settings) -> list[PartitionLog]:
    """Every partition's leader replica (tierflow.cluster): the one copy and verify read."""
    with as_command_error(*CLUSTER_ERRORS):
        return [found.log for found in leader_logs(settings)]
