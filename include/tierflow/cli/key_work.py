"""The work behind ``tierflow keys ...`` and ``tierflow rewrap-keys`` (their options are in
``key_commands``): imported when one of them runs."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.markup import escape

from tierflow.cli.common import CommandError, as_command_error, print_json
from tierflow.cli.console import stdout_console
from tierflow.cli.progress import work_progress
from tierflow.config import InvalidSettingError, Settings
from tierflow.metadata.store_base import wall_clock_ms
from tierflow.transform.errors import KeyRingError
from tierflow.transform.keyring import KeyRing

# Paths and keys must stay on one line, whatever the terminal width.
console = stdout_console(soft_wrap=True, highlight=False)


def _settings() -> Settings:
    with as_command_error(InvalidSettingError):
        return Settings.from_env()


def _ring_path(args: argparse.Namespace) -> Path:
    path = args.keyring or _settings().storage.keyring
    if path is None:
        raise CommandError("no key ring: pass --keyring or set TIERFLOW_KEYRING")
    return Path(path)


def _load(args: argparse.Namespace) -> KeyRing:
    with as_command_error(KeyRingError):
        return KeyRing.load(_ring_path(args))


def keys_generate(args: argparse.Namespace) -> int:
    with as_command_error(KeyRingError):
        ring = KeyRing.generate(args.dir, args.key_id, bits=args.bits)
    console.print(f"created {ring.path} with active key {ring.active_key_id!r}")
    console.print(f"turn encryption on with TIERFLOW_KEYRING={ring.path}")
    return 0


def keys_add(args: argparse.Namespace) -> int:
    ring = _load(args)
    with as_command_error(KeyRingError):
        if args.generate:
            if args.private_key_file is not None:
                raise CommandError("--private-key-file goes with --public-key-file")
            ring.generate_key(args.key_id, bits=args.bits, activate=args.activate)
        else:
            ring.add_key(
                args.key_id, args.public_key_file, args.private_key_file, activate=args.activate
            )
        ring.save()
    state = "active" if ring.active_key_id == args.key_id else "not active"
    console.print(f"added key {args.key_id!r} to {ring.path} ({state})")
    return 0


def keys_activate(args: argparse.Namespace) -> int:
    ring = _load(args)
    with as_command_error(KeyRingError):
        ring.activate(args.key_id)
        ring.save()
    console.print(f"active key is now {args.key_id!r}; run 'tierflow rewrap-keys' for old ones")
    return 0


def keys_list(args: argparse.Namespace) -> int:
    ring = _load(args)
    keys = [
        {
            "key_id": key_id,
            "active": key_id == ring.active_key_id,
            "public_key_file": str(ring.key_pair(key_id).public_key_file),
            "private_key": ring.key_pair(key_id).private_key is not None,
        }
        for key_id in ring.key_ids
    ]
    if args.json:
        print_json({"keyring": str(_ring_path(args)), "keys": keys})
        return 0
    for key in keys:
        marker = "*" if key["active"] else " "
        private = "private key" if key["private_key"] else "public key only"
        console.print(f"{marker} {key['key_id']}  {key['public_key_file']}  ({private})")
    return 0


def rewrap_keys(args: argparse.Namespace) -> int:
    from tierflow.lifecycle.key_rewrap import rewrap_segments
    from tierflow.runtime import open_storage, open_store
    from tierflow.storage.chunked import ChunkedRemoteStorageManager

    settings = _settings()
    if settings.storage.keyring is None:
        raise CommandError("rewrap-keys needs the key ring: set TIERFLOW_KEYRING")
    with as_command_error(KeyRingError):
        rsm = open_storage(settings)
    if not isinstance(rsm, ChunkedRemoteStorageManager):
        raise CommandError("rewrap-keys works on the chunked layout (TIERFLOW_STORAGE_LAYOUT)")
    store = open_store(settings)
    # On stderr (stdout keeps the summary alone): a bar on a terminal, log lines elsewhere.
    with work_progress("rewrap-keys") as progress:
        summary = rewrap_segments(
            store,
            rsm,
            actor="cli-rewrap-keys",
            now_ms=wall_clock_ms,
            topic=args.topic,
            progress=progress,
        )
    assert rsm.key_ring is not None
    console.print(
        f"{len(summary.rewrapped)} re-wrapped under {rsm.key_ring.active_key_id!r}, "
        f"{len(summary.unchanged)} unchanged, {len(summary.repaired_rows)} store rows repaired, "
        f"{len(summary.failed)} failed"
    )
    for segment_id, error in summary.failed:
        console.print(f"  [red]failed[/red] {segment_id}: {escape(error)}")
    return 1 if summary.failed else 0
