"""The store by hand: ``topics register|list``, ``events`` and ``db``.

Thin adapters from parsed arguments to the library; what they run is in ``commands_work``,
imported when one of them runs, and what the other command modules' work shares is in
``shared``.
"""

from __future__ import annotations

from tierflow.cli import options
from tierflow.cli.common import CommandError as CommandError  # callers import it from here
from tierflow.cli.spec import Command, Group, Work, arg

# The registration event's actor when the topic id was derived: the store records that it was.
DERIVED_ID_ACTOR = "cli (topic id derived: no partition.metadata)"

WORK = Work("tierflow.cli.commands_work")


# -- the commands --------------------------------------------------------------------------

TOPIC_ACTIONS = (
    Command(
        "register",
        WORK.topics_register,
        help="register a topic found in the log dirs (idempotent)",
        description="Register a topic, or update its configs. The topic id is read from "
        "the partition.metadata files in the log dirs unless --topic-id is given.",
        args=(
            arg("name", help="the topic's name, as Kafka has it"),
            arg("--topic-id", help="Kafka topic id (22-character base64)"),
            options.config(
                "a Kafka topic config, e.g. remote.storage.enable=true, retention.ms=86400000"
            ),
        ),
    ),
    Command(
        "list",
        WORK.topics_list,
        help="list registered topics",
        args=(options.json("print the topics as JSON, configs under Kafka's names"),),
    ),
)

COMMANDS = (
    Command(
        "events",
        WORK.events,
        help="show the state-transition history",
        description="The state transitions the store recorded (topics, partitions, segments), "
        "oldest first, with who made each: an Airflow task instance or a CLI process.",
        args=(
            options.topic("only this topic's events"),
            arg("--segment", metavar="SEGMENT_ID", help="only this remote segment's events"),
            arg("--limit", type=int, default=50, help="show the newest N [50]"),
            options.json("print the events as JSON for scripts"),
        ),
    ),
    Group(
        "db",
        help="metadata store schema",
        dest="db_command",
        commands=(Command("upgrade", WORK.db_upgrade, help="apply Alembic migrations"),),
    ),
)
