"""``tierflow keys ...`` and ``tierflow rewrap-keys``: the key ring and key rotation.

Rotation is: ``keys add --generate --activate`` (new segments are encrypted under the new key,
old ones still read with the old key on the ring), then ``rewrap-keys`` (old data keys are
re-wrapped under the new key; only manifests change), after which the old key may go.
What they run is in ``key_work``, imported when one of them runs.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from tierflow.cli import options
from tierflow.cli.defaults import KEYRING_FILE, MIN_BITS
from tierflow.cli.spec import Command, Group, OneOf, Work, add_commands, arg, flag

WORK = Work("tierflow.cli.key_work")


# -- the commands --------------------------------------------------------------------------


KEYS = Group(
    "keys",
    help="manage the encryption key ring (RSA keys that wrap segment data keys)",
    description="The key ring file lists RSA key pairs by id and names the active one; "
    "new segments get data keys wrapped under the active key. TIERFLOW_KEYRING points at "
    "the file and turns encryption on.",
    dest="keys_command",
    commands=(
        Command(
            "generate",
            WORK.keys_generate,
            help="create a new key ring with one fresh key pair",
            description=f"Write <id>-public.pem, <id>-private.pem and {KEYRING_FILE} into DIR. "
            "The PEM files are also valid for Aiven's plugin (SPKI public, PKCS#8 private).",
            args=(
                arg("--dir", required=True, type=Path, help="directory for the new ring"),
                arg("--key-id", required=True, help="id of the key (no ':')"),
                arg("--bits", type=int, default=MIN_BITS, help=f"RSA size [{MIN_BITS}]"),
            ),
        ),
        Command(
            "add",
            WORK.keys_add,
            help="add a key pair to the ring (generate one, or give PEM files)",
            description="Add a key pair under a new id. Existing ids are never replaced, so "
            "segments written under them stay readable.",
            args=(
                options.KEYRING,
                arg("--key-id", required=True, help="id of the new key (no ':')"),
                OneOf(
                    (
                        flag("--generate", "generate a fresh pair beside the ring file"),
                        arg("--public-key-file", type=Path, help="PEM public key (X.509 SPKI)"),
                    )
                ),
                arg(
                    "--private-key-file",
                    type=Path,
                    help="PEM private key (PKCS#8) for --public-key-file",
                ),
                arg("--bits", type=int, default=MIN_BITS, help=f"with --generate [{MIN_BITS}]"),
                flag("--activate", "make it the active key for new segments"),
            ),
        ),
        Command(
            "activate",
            WORK.keys_activate,
            help="switch the active key id (new segments use it)",
            description="Switch the active key. Old keys stay on the ring for reading; run "
            "rewrap-keys to move old segments under the new key.",
            args=(options.KEYRING, arg("key_id", help="a key id already on the ring")),
        ),
        Command(
            "list",
            WORK.keys_list,
            help="show the key ids and which one is active",
            description="List the key ring's keys, the active one marked *: each key's id, "
            "its public key file and whether its private key is on this machine (needed to "
            "read the segments it wrapped).",
            args=(options.KEYRING, options.json("print the keys as JSON")),
        ),
    ),
)

REWRAP = Command(
    "rewrap-keys",
    WORK.rewrap_keys,
    help="re-wrap old segments' data keys under the active key (manifests only)",
    description="For every COPY_SEGMENT_FINISHED segment whose data key is wrapped under "
    "another key id, unwrap it with that (still present) key and wrap it under the active "
    "one, rewriting only the .rsm-manifest object; chunk data is not touched. The store's "
    "row for the manifest is updated. Safe to interrupt and rerun. Uses TIERFLOW_KEYRING.",
    args=(options.topic("only this topic"),),
)


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``keys`` and ``rewrap-keys`` to the ``tierflow`` command."""
    add_commands(sub, (KEYS, REWRAP))
