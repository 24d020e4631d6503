"""The key ring: RSA key-encryption keys by id, one of them active.

New data keys are wrapped under the active id. Older ids stay on the ring so segments written
under them still read; rotation adds a key and switches the active id, and ``rewrap`` later
moves old segments' data keys under the new one.

The ring is a JSON file::

    {"active": "k2", "keys": {"k1": {"public_key_file": "k1-public.pem",
                                     "private_key_file": "k1-private.pem"}, ...}}

Relative paths are relative to the JSON file. The PEM files are what Aiven's plugin reads:
X.509 SubjectPublicKeyInfo and unencrypted PKCS#8, so the same files configure both.

Keys only ever come from files: the ring file TIERFLOW_KEYRING names, and the PEM files it
names. A key pasted where a path belongs (the variable, a ``*_key_file`` entry, ``--keyring``)
is refused without being repeated: every error here names the path it could not read, and
that "path" would be the key.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from Crypto.PublicKey import RSA
from Crypto.PublicKey.RSA import RsaKey

from tierflow.transform.encryption import (
    format_data_key,
    parse_data_key,
    unwrap_data_key,
    wrap_data_key,
)
from tierflow.transform.errors import KeyNotFoundError, KeyRingError, WrongKeyError

KEYRING_FILE = "keyring.json"
# OAEP with SHA3-512 needs a modulus of at least 2*64+2 bytes plus the 32-byte key.
MIN_BITS = 2048
# What no file path looks like: PEM armour, line breaks, or 200 characters of base64 in a row
# (a 2048-bit key is 1,600; a path has dots, dashes or underscores long before that).
_PEM_MARKERS = ("-----BEGIN", "-----END", "\n", "\r")
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/=]{200,}")


@dataclass(frozen=True, repr=False)
class KeyPair:
    key_id: str
    public_key_file: Path
    private_key_file: Path | None
    public_key: RsaKey
    private_key: RsaKey | None

    def __repr__(self) -> str:
        return f"KeyPair({self.key_id!r}, {self.public_key_file})"


def validate_key_id(key_id: str) -> str:
    """Aiven's dataKey is ``<id>:<base64>``: an id must be non-blank and free of ':'."""
    if not key_id.strip() or ":" in key_id or key_id != key_id.strip():
        raise KeyRingError(f"invalid key id {key_id!r}: non-blank, no ':', no surrounding spaces")
    return key_id


def looks_like_key_material(path: str | Path) -> bool:
    text = str(path)
    return any(marker in text for marker in _PEM_MARKERS) or bool(_BASE64_RUN.search(text))


def require_path(path: str | Path, what: str) -> Path:
    """``path`` as a Path; a key where a path belongs raises without showing the value."""
    if looks_like_key_material(path):
        raise KeyRingError(
            f"{what}: expected a file path but got what looks like key material (PEM or "
            "base64); write the key to a file readable only by tierflow and name that file "
            "(the value is not shown)"
        )
    return Path(path)


def load_key_pair(key_id: str, public_key_file: Path, private_key_file: Path | None) -> KeyPair:
    public = _read_key(key_id, public_key_file)
    if public.has_private():
        raise KeyRingError(f"key id {key_id!r}: {public_key_file} holds a private key")
    private = None
    if private_key_file is not None:
        private = _read_key(key_id, private_key_file)
        if not private.has_private():
            raise KeyRingError(f"key id {key_id!r}: {private_key_file} holds no private key")
        if private.public_key() != public:
            raise KeyRingError(
                f"key id {key_id!r}: {private_key_file} is not the private key of {public_key_file}"
            )
    if public.size_in_bits() < MIN_BITS:
        raise KeyRingError(
            f"key id {key_id!r}: {public.size_in_bits()}-bit RSA key, need >= {MIN_BITS}"
        )
    return KeyPair(key_id, public_key_file, private_key_file, public, private)


def _read_key(key_id: str, path: Path) -> RsaKey:
    require_path(path, f"key id {key_id!r}")
    try:
        return RSA.import_key(path.read_bytes())
    except OSError as exc:
        raise KeyRingError(f"key id {key_id!r}: cannot read {path}: {exc.strerror}") from None
    except (ValueError, IndexError, TypeError) as exc:
        raise KeyRingError(f"key id {key_id!r}: {path} is not an RSA key ({exc})") from None


def write_key_pair(directory: Path, key_id: str, *, bits: int = MIN_BITS) -> tuple[Path, Path]:
    """A new RSA pair as ``<id>-public.pem`` (SPKI) and ``<id>-private.pem`` (PKCS#8, 0600)."""
    validate_key_id(key_id)
    if bits < MIN_BITS:
        raise KeyRingError(f"{bits}-bit RSA keys are too small; use >= {MIN_BITS}")
    directory.mkdir(parents=True, exist_ok=True)
    public_file = directory / f"{key_id}-public.pem"
    private_file = directory / f"{key_id}-private.pem"
    for path in (public_file, private_file):
        if path.exists():
            raise KeyRingError(f"key id {key_id!r}: {path} already exists; not overwriting it")
    key = RSA.generate(bits)
    fd = os.open(private_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(key.export_key(format="PEM", pkcs=8))
    public_file.write_bytes(key.public_key().export_key(format="PEM"))
    return public_file, private_file


class KeyRing:
    def __init__(self, active_key_id: str, keys: list[KeyPair], path: Path | None = None) -> None:
        self._keys = {pair.key_id: pair for pair in keys}
        self.path = path
        if active_key_id not in self._keys:
            raise KeyNotFoundError(active_key_id, self.key_ids)
        self._active = active_key_id

    @property
    def active_key_id(self) -> str:
        return self._active

    @property
    def key_ids(self) -> list[str]:
        return sorted(self._keys)

    def key_pair(self, key_id: str) -> KeyPair:
        try:
            return self._keys[key_id]
        except KeyError:
            raise KeyNotFoundError(key_id, self.key_ids) from None

    # -- files --------------------------------------------------------------------------------

    @classmethod
    def load(cls, path: Path) -> KeyRing:
        path = require_path(path, "key ring (TIERFLOW_KEYRING, --keyring)")
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise KeyRingError(f"key ring {path}: cannot read ({exc.strerror})") from None
        except ValueError as exc:
            raise KeyRingError(f"key ring {path}: not JSON ({exc})") from None
        if not isinstance(raw, dict) or set(raw) != {"active", "keys"}:
            raise KeyRingError(f'key ring {path}: expected {{"active": ..., "keys": {{...}}}}')
        entries = raw["keys"]
        if not isinstance(entries, dict) or not entries:
            raise KeyRingError(f"key ring {path}: 'keys' must be a non-empty object")
        pairs = []
        for key_id, files in entries.items():
            validate_key_id(key_id)
            if not isinstance(files, dict) or not isinstance(files.get("public_key_file"), str):
                raise KeyRingError(f"key ring {path}: key id {key_id!r} needs public_key_file")
            private = files.get("private_key_file")
            for name in (files["public_key_file"], private):
                if name is not None:
                    require_path(str(name), f"key ring {path}: key id {key_id!r}")
            pairs.append(
                load_key_pair(
                    key_id,
                    _resolve(path, files["public_key_file"]),
                    None if private is None else _resolve(path, str(private)),
                )
            )
        try:
            return cls(str(raw["active"]), pairs, path)
        except KeyNotFoundError as exc:
            raise KeyRingError(f"key ring {path}: active {exc}") from None

    @classmethod
    def generate(cls, directory: Path, key_id: str, *, bits: int = MIN_BITS) -> KeyRing:
        """A new ring with one fresh key, active: PEM files and ``keyring.json`` in directory."""
        directory = Path(directory)
        path = directory / KEYRING_FILE
        if path.exists():
            raise KeyRingError(f"{path} already exists; add keys to it with 'keys add'")
        public_file, private_file = write_key_pair(directory, key_id, bits=bits)
        ring = cls(key_id, [load_key_pair(key_id, public_file, private_file)], path)
        ring.save()
        return ring

    def save(self, path: Path | None = None) -> Path:
        """Write the ring atomically (temporary file, fsync, rename)."""
        target = Path(path or self.path or "")
        if not target.name:
            raise KeyRingError("key ring has no file to save to")
        keys = {}
        for key_id in self.key_ids:
            pair = self._keys[key_id]
            entry = {"public_key_file": _relative(target, pair.public_key_file)}
            if pair.private_key_file is not None:
                entry["private_key_file"] = _relative(target, pair.private_key_file)
            keys[key_id] = entry
        text = json.dumps({"active": self._active, "keys": keys}, indent=2) + "\n"
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.tmp")
        with open(tmp, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, target)
        self.path = target
        return target

    # -- rotation -----------------------------------------------------------------------------

    def add_key(
        self,
        key_id: str,
        public_key_file: Path,
        private_key_file: Path | None = None,
        *,
        activate: bool,
    ) -> None:
        """Add a key pair (in memory; ``save()`` persists). Ids are never replaced."""
        validate_key_id(key_id)
        if key_id in self._keys:
            raise KeyRingError(f"key id {key_id!r} is already in the key ring")
        pair = load_key_pair(
            key_id,
            Path(public_key_file).resolve(),
            None if private_key_file is None else Path(private_key_file).resolve(),
        )
        self._keys[key_id] = pair
        if activate:
            self._active = key_id

    def generate_key(self, key_id: str, *, bits: int = MIN_BITS, activate: bool) -> None:
        """A fresh pair written beside the ring file, then ``add_key``."""
        if self.path is None:
            raise KeyRingError("generate_key needs a key ring that lives in a file")
        validate_key_id(key_id)
        if key_id in self._keys:
            raise KeyRingError(f"key id {key_id!r} is already in the key ring")
        public_file, private_file = write_key_pair(self.path.parent, key_id, bits=bits)
        self.add_key(key_id, public_file, private_file, activate=activate)

    def activate(self, key_id: str) -> None:
        self.key_pair(key_id)
        self._active = key_id

    # -- data keys ----------------------------------------------------------------------------

    def wrap(self, data_key: bytes) -> str:
        """The manifest's ``dataKey`` for ``data_key`` under the active key id."""
        pair = self._keys[self._active]
        return format_data_key(pair.key_id, wrap_data_key(pair.public_key, data_key))

    def unwrap(self, data_key_field: str) -> bytes:
        """The data key of a manifest's ``dataKey``; KeyNotFoundError/WrongKeyError name the id."""
        key_id, wrapped = parse_data_key(data_key_field)
        pair = self.key_pair(key_id)
        if pair.private_key is None:
            raise WrongKeyError(key_id, f"no private key on the ring ({pair.public_key_file} only)")
        try:
            return unwrap_data_key(pair.private_key, wrapped)
        except ValueError:
            raise WrongKeyError(
                key_id,
                f"the private key {pair.private_key_file} does not unwrap this data key "
                "(wrong key file for this id?)",
            ) from None


def _resolve(ring_file: Path, name: str) -> Path:
    path = Path(name)
    return path if path.is_absolute() else (ring_file.parent / path).resolve()


def _relative(ring_file: Path, path: Path) -> str:
    """Paths beside the ring are stored relative, so the directory can move as a whole."""
    base = ring_file.parent.resolve()
    resolved = path.resolve()
    return str(resolved.relative_to(base)) if resolved.is_relative_to(base) else str(resolved)
