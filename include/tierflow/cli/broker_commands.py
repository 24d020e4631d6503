"""``tierflow broker-config``: the broker settings that tier to, and read, tierflow's bucket."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tierflow.cli import options
from tierflow.cli.common import as_command_error, options_from, print_json
from tierflow.cli.spec import Command, add_commands, arg
from tierflow.cluster.broker_options import DEFAULT_LISTENER, BrokerConfigError, BrokerOptions

DESCRIPTION = """\
Print the server.properties lines that make Kafka brokers (3.9, 4.x) tier to, and read, the
bucket tierflow writes: a topic can then be handed from tierflow to the brokers, or the
brokers' segments followed. Add them to every broker's server.properties.

What storage manager reads the bucket follows TIERFLOW_STORAGE_LAYOUT:
  chunked      Aiven's tiered-storage-for-apache-kafka plugin: its storage backend for the
               bucket (a directory, s3://, gs://, abfs://), the key prefix, chunk size,
               compression, and with TIERFLOW_KEYRING the key pairs, written as PEM files
               (mode 0600) into --key-dir; the key files' paths are printed, never a key
  kafka-local  Kafka's LocalTieredStorage (the kafka-storage test jar), for tests and demos;
               the bucket must be a directory
  plain        refused: no broker plugin reads it

Credentials are never printed: for a cloud bucket a comment names the plugin's credential
settings to fill in. Settings marked required in a comment (an S3 region without
--s3-region) must be added before the broker starts.
"""


def broker_config_command(args: argparse.Namespace) -> int:
    # The key export (cryptography) and the settings load when the command runs, not with
    # every command.
    from tierflow.cluster.broker_config import broker_config
    from tierflow.config import Settings

    settings = Settings.from_env()
    chosen = options_from(BrokerOptions, args)
    with as_command_error(BrokerConfigError):
        config = broker_config(settings, chosen)
    if args.json:
        print_json(config.properties())
    else:
        print(config.render(), end="")
    if config.key_pairs:  # after the report: a reader gone (`| head`) leaves stderr quiet
        sys.stdout.flush()
        where = config.key_pairs[0].public_key_file.parent
        print(f"wrote {len(config.key_pairs)} key pair(s) to {where} (mode 0600)", file=sys.stderr)
    return 0


BROKER_CONFIG = Command(
    "broker-config",
    broker_config_command,
    help="print the broker settings that tier to, and read, tierflow's bucket",
    description=DESCRIPTION,
    raw=True,
    args=(
        arg(
            "--listener-name",
            default=DEFAULT_LISTENER,
            metavar="NAME",
            help="the brokers' listener the remote log metadata manager uses "
            f"(remote.log.metadata.manager.listener.name) [{DEFAULT_LISTENER}]",
        ),
        arg(
            "--class-path",
            metavar="PATHS",
            help="remote.log.storage.manager.class.path: the plugin's jars, ':'-separated "
            "(left out: a comment says what to put there)",
        ),
        arg(
            "--key-dir",
            type=Path,
            metavar="DIR",
            help="with TIERFLOW_KEYRING: the directory to write the brokers' PEM key files to "
            "(<id>-public.pem, <id>-private.pem, mode 0600)",
        ),
        arg(
            "--s3-region",
            metavar="REGION",
            help="the s3:// bucket's region (Aiven requires rsm.config.storage.s3.region)",
        ),
        arg(
            "--endpoint-url",
            metavar="URL",
            help="a custom S3, GCS or Azure endpoint (an S3-compatible store, an emulator)",
        ),
        options.json("print the properties as one JSON object, without the comments"),
    ),
)


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``broker-config`` to the ``tierflow`` command."""
    add_commands(sub, (BROKER_CONFIG,))
