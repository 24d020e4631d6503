"""The key ring's pairs as the PEM files Aiven's plugin reads, for the brokers.

Aiven reads each pair from two files (``encryption.key.pairs.<id>.public.key.file`` and
``.private.key.file``; keys as values are an open request, its issue #594): an X.509
SubjectPublicKeyInfo public key and an unencrypted PKCS#8 private key. A key ring may hold
other encodings (a PKCS#1 ``BEGIN RSA PRIVATE KEY`` file added by hand, which Aiven refuses),
so every pair is written out again in those two: ``<id>-public.pem`` and ``<id>-private.pem``,
both mode 0600, in a directory of mode 0700 when it is made here. Rewriting gives the same
bytes, so a rerun is harmless. The keys are never printed: only their paths are.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from tierflow.cluster.broker_options import BrokerConfigError
from tierflow.config import variable
from tierflow.transform.keyring import KeyRing

# An id goes into property names and the comma-separated encryption.key.pairs list, and into
# file names: no separators, spaces or path parts.
_KEY_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


@dataclass(frozen=True)
class BrokerKeyPair:
    key_id: str
    active: bool
    public_key_file: Path
    private_key_file: Path


def write_broker_keys(ring: KeyRing, directory: Path) -> tuple[BrokerKeyPair, ...]:
    """Every pair of ``ring`` as PEM files in ``directory``; BrokerConfigError for a pair the
    brokers cannot use (an id Aiven's settings cannot carry, no private key here)."""
    for key_id in ring.key_ids:
        _check_pair(ring, key_id)
    directory = _key_directory(directory)
    written = []
    for key_id in ring.key_ids:
        pair = ring.key_pair(key_id)
        assert pair.private_key is not None  # _check_pair
        public = directory / f"{key_id}-public.pem"
        private = directory / f"{key_id}-private.pem"
        _write_private(public, pair.public_key.export_key(format="PEM"))
        _write_private(private, pair.private_key.export_key(format="PEM", pkcs=8))
        written.append(BrokerKeyPair(key_id, key_id == ring.active_key_id, public, private))
    return tuple(written)


def _check_pair(ring: KeyRing, key_id: str) -> None:
    if not _KEY_ID.fullmatch(key_id):
        raise BrokerConfigError(
            f"{variable('keyring')}: key id {key_id!r} cannot be one of Aiven's "
            "encryption.key.pairs (letters, digits, '_', '.', '-'; no ',' or spaces)"
        )
    pair = ring.key_pair(key_id)
    if pair.private_key is None:
        raise BrokerConfigError(
            f"{variable('keyring')}: key id {key_id!r} has no private key here "
            f"({pair.public_key_file} only); Aiven's plugin needs both files of every pair on "
            "the ring"
        )


def _key_directory(directory: Path) -> Path:
    directory = Path(directory).expanduser().resolve()
    if directory.exists() and not directory.is_dir():
        raise BrokerConfigError(f"--key-dir {directory}: not a directory")
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise BrokerConfigError(
            f"--key-dir {directory}: cannot create it ({exc.strerror})"
        ) from None
    return directory


def _write_private(path: Path, data: bytes) -> None:
    """``data`` into ``path``, mode 0600 whatever the umask, replacing it in one rename."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.unlink(missing_ok=True)  # left by a run that died while writing
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out:
            os.fchmod(out.fileno(), 0o600)
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise BrokerConfigError(f"--key-dir: cannot write {path} ({exc.strerror})") from None
