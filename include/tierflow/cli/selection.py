"""The leader replicas a command's ``--topic``/``--partition`` select, and why none, if none.

"No partition matches" is the wrong thing to say when partitions match but none can be read:
their leader is on a broker that is not configured, or they have no leader (a live cluster
electing one, a stopped one whose last leader is not here). The error then says which and why
(``tierflow.cluster.unread``), and ``--json`` gets the same as an object.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tierflow.cli.common import NotFoundError, as_command_error, print_json
from tierflow.cli.shared import CLUSTER_ERRORS
from tierflow.cluster.leaders import leader_scan
from tierflow.cluster.unread import UnreadPartition, why_unread
from tierflow.config import Settings
from tierflow.kafka.log_dir import PartitionLog


class NothingSelectedError(NotFoundError):
    """No selected partition can be read here; ``unread`` says why of each that matched."""

    def __init__(self, message: str, unread: list[UnreadPartition]) -> None:
        super().__init__(message)
        self.unread = unread

    def print_json(self) -> None:
        """``--json``: the reason as an object on stdout (the line still goes to stderr)."""
        print_json({"error": str(self), "unread": [u.as_dict() for u in self.unread]})


@dataclass(frozen=True)
class Selection:
    """The selected partitions' leader replicas, and those matched but not read."""

    logs: list[PartitionLog]
    unread: list[UnreadPartition] = field(default_factory=list)


def select_leaders(settings: Settings, topic: str | None, partition: int | None) -> Selection:
    """The leader replicas the filters select; NothingSelectedError when there are none."""

    def wanted(t: str, p: int) -> bool:
        return (topic is None or t == topic) and (partition is None or p == partition)

    with as_command_error(*CLUSTER_ERRORS):
        scan = leader_scan(settings)
    found = Selection(
        [f.log for f in scan.found if wanted(f.log.topic, f.log.partition)],
        [u for u in scan.unread if wanted(u.topic, u.partition)],
    )
    if not found.logs:
        filters = " ".join(
            f"--{name} {value}"
            for name, value in (("topic", topic), ("partition", partition))
            if value is not None
        )
        if found.unread:
            matching = f" matching {filters}" if filters else ""
            message = f"no partition in the log dirs{matching} can be read: "
            raise NothingSelectedError(message + why_unread(found.unread), found.unread)
        raise NothingSelectedError(
            f"no partition in the log dirs matches {filters or 'anything'}", []
        )
    return found
