"""Envelope encryption as Aiven does it: AES-256-GCM per chunk, RSA-OAEP-wrapped data keys.

Each segment gets a fresh 32-byte data key (DEK) and 32 random AAD bytes, stored in the clear in
the manifest. Every chunk (and every non-empty index) is ``IV(12) || ciphertext || tag(16)``
under that DEK and AAD with a fresh random IV. The DEK is wrapped with RSA-OAEP, SHA3-512 for
both the OAEP hash and MGF1, empty label: BouncyCastle's ``OAEPWithSHA3-512AndMGF1Padding``.
Nothing else (chunk number, segment id) may be bound into GCM, or Aiven readers break.
"""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass

from Crypto.Cipher import AES, PKCS1_OAEP
from Crypto.Hash import SHA3_512
from Crypto.PublicKey.RSA import RsaKey
from Crypto.Signature import pss

from tierflow.transform.errors import CorruptChunkError

IV_SIZE = 12
TAG_SIZE = 16
OVERHEAD = IV_SIZE + TAG_SIZE
DATA_KEY_SIZE = 32
AAD_SIZE = 32


@dataclass(frozen=True, repr=False)
class DataKey:
    """A segment's AES-256 key and AAD; repr hides the key so it never reaches a log."""

    key: bytes
    aad: bytes

    @classmethod
    def generate(cls) -> DataKey:
        return cls(os.urandom(DATA_KEY_SIZE), os.urandom(AAD_SIZE))

    def __repr__(self) -> str:
        return "DataKey(<hidden>)"


def encrypt_chunk(plain: bytes, data_key: DataKey) -> bytes:
    iv = os.urandom(IV_SIZE)
    cipher = AES.new(data_key.key, AES.MODE_GCM, nonce=iv, mac_len=TAG_SIZE)
    cipher.update(data_key.aad)
    ciphertext, tag = cipher.encrypt_and_digest(plain)
    return iv + ciphertext + tag


def decrypt_chunk(blob: bytes, data_key: DataKey, *, object_key: str, chunk: int | str) -> bytes:
    if len(blob) < OVERHEAD:
        raise CorruptChunkError(
            object_key, chunk, f"{len(blob)} bytes, shorter than IV and GCM tag ({OVERHEAD})"
        )
    cipher = AES.new(data_key.key, AES.MODE_GCM, nonce=blob[:IV_SIZE], mac_len=TAG_SIZE)
    cipher.update(data_key.aad)
    try:
        return cipher.decrypt_and_verify(blob[IV_SIZE:-TAG_SIZE], blob[-TAG_SIZE:])
    except ValueError:
        raise CorruptChunkError(
            object_key, chunk, "AES-GCM tag mismatch: the chunk or the AAD was altered"
        ) from None


def _oaep(key: RsaKey) -> PKCS1_OAEP.PKCS1OAEP_Cipher:
    return PKCS1_OAEP.new(
        key, hashAlgo=SHA3_512, mgfunc=lambda seed, length: pss.MGF1(seed, length, SHA3_512)
    )


def wrap_data_key(public_key: RsaKey, key: bytes) -> bytes:
    return _oaep(public_key).encrypt(key)


def unwrap_data_key(private_key: RsaKey, wrapped: bytes) -> bytes:
    """Raises ValueError when the private key does not match the one that wrapped."""
    return _oaep(private_key).decrypt(wrapped)


def format_data_key(key_id: str, wrapped: bytes) -> str:
    """The manifest's ``dataKey``: ``<key id>:<standard base64 of the wrapped key>``."""
    return f"{key_id}:{base64.b64encode(wrapped).decode('ascii')}"


def parse_data_key(text: str) -> tuple[str, bytes]:
    """(key id, wrapped key); ValueError like Aiven's parser for zero or several ':'."""
    parts = text.split(":")
    if len(parts) != 2 or not parts[0].strip():
        raise ValueError(f"dataKey {text[:40]!r}...: expected '<key id>:<base64>'")
    try:
        return parts[0], base64.b64decode(parts[1], validate=True)
    except ValueError as exc:  # binascii.Error, or non-ASCII text
        raise ValueError(f"dataKey of key id {parts[0]!r}: not base64 ({exc})") from None
