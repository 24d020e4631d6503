"""What the commands' work shares that needs the library: the console, the errors every
command reports in one line, the leader replicas that copy and verify read, a run over
partitions that goes on past one that fails, and rows printed as JSON or one line each.

Only modules of a command's work import it (never a command table), so that building the
parser loads none of this.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Protocol, TypeVar

from tierflow.cli.common import as_command_error, partition_failed, print_json
from tierflow.cli.console import stdout_console
from tierflow.cluster.brokers import BrokerIdError
from tierflow.cluster.leaders import leader_logs
from tierflow.cluster.replicas import DuplicateReplicaError
from tierflow.config import Settings
from tierflow.kafka.errors import ClusterMetadataError, KafkaFormatError
from tierflow.lifecycle.copy.lease import PartitionBusyError
from tierflow.lifecycle.copy.plan import CopyFailedError, TopicIdMismatchError
from tierflow.metadata.errors import InvalidConfigError, UnknownTopicError
from tierflow.rsm import RemoteStorageError
from tierflow.runtime import UnknownPartitionError
from tierflow.units import error_line

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


Where = TypeVar("Where")  # what names a partition's topic: a Topic, or a topic id
Report = TypeVar("Report")


def each_partition(
    targets: Iterable[tuple[Where, int]],
    run: Callable[[Where, int], Report],
    topic_name: Callable[[Where], str],
    errors: tuple[type[Exception], ...],
) -> tuple[list[Report], int]:
    """``run`` for each (topic, partition): one that fails with ``errors`` is named on stderr
    and the others go on. The reports of those that ran, and how many failed."""
    reports: list[Report] = []
    failed = 0
    for topic, partition in targets:
        try:
            reports.append(run(topic, partition))
        except errors as exc:
            failed += 1
            partition_failed(f"{topic_name(topic)}-{partition}", error_line(exc))
    return reports, failed


class Row(Protocol):
    def as_dict(self) -> dict: ...


R = TypeVar("R", bound=Row)


def print_rows(
    as_json: bool,
    rows: Sequence[R],
    line: Callable[[R], str],
    key: str = "partitions",
    **head: object,
) -> None:
    """``--json``: one document, ``head``'s fields then the rows' dicts under ``key``; else a
    line per row, as it is (no highlighting)."""
    if as_json:
        print_json({**head, key: [row.as_dict() for row in rows]})
        return
    for row in rows:
        console.print(line(row), highlight=False)
