"""AES-GCM chunk framing and RSA-OAEP(SHA3-512) key wrapping, checked independently.

The GCM framing is decoded with the ``cryptography`` package (a different implementation), and
the OAEP padding is undone by hand from RFC 8017 with hashlib's SHA3-512, so a wrong hash, MGF
or label would fail here even though pycryptodome agrees with itself.
"""

from __future__ import annotations

import hashlib

import pytest
from Crypto.PublicKey import RSA
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from tierflow.transform.encryption import (
    OVERHEAD,
    DataKey,
    decrypt_chunk,
    encrypt_chunk,
    format_data_key,
    parse_data_key,
    wrap_data_key,
)
from tierflow.transform.errors import CorruptChunkError


def test_chunk_is_iv_ciphertext_tag_and_decrypts_with_another_library() -> None:
    key = DataKey.generate()
    assert len(key.key) == 32 and len(key.aad) == 32
    blob = encrypt_chunk(b"hello chunk" * 100, key)
    assert len(blob) == 1100 + OVERHEAD
    assert AESGCM(key.key).decrypt(blob[:12], blob[12:], key.aad) == b"hello chunk" * 100
    foreign = bytes(12) + AESGCM(key.key).encrypt(bytes(12), b"from elsewhere", key.aad)
    assert decrypt_chunk(foreign, key, object_key="k", chunk=0) == b"from elsewhere"


def test_fresh_iv_per_chunk() -> None:
    key = DataKey.generate()
    assert encrypt_chunk(b"same", key)[:12] != encrypt_chunk(b"same", key)[:12]


def test_tampering_names_key_and_chunk() -> None:
    key = DataKey.generate()
    blob = bytearray(encrypt_chunk(b"x" * 50, key))
    blob[20] ^= 1
    with pytest.raises(CorruptChunkError, match=r"seg\.log: chunk 7: AES-GCM tag mismatch"):
        decrypt_chunk(bytes(blob), key, object_key="seg.log", chunk=7)
    other_aad = DataKey(key.key, bytes(32))
    with pytest.raises(CorruptChunkError):
        decrypt_chunk(encrypt_chunk(b"y", key), other_aad, object_key="k", chunk=0)


def _mgf1_sha3(seed: bytes, length: int) -> bytes:
    out = b""
    counter = 0
    while len(out) < length:
        out += hashlib.sha3_512(seed + counter.to_bytes(4, "big")).digest()
        counter += 1
    return out[:length]


def _oaep_sha3_decode_by_hand(private: RSA.RsaKey, wrapped: bytes) -> bytes:
    """RFC 8017 EME-OAEP decoding with SHA3-512 for hash and MGF1, empty label."""
    k = private.size_in_bytes()
    em = pow(int.from_bytes(wrapped, "big"), private.d, private.n).to_bytes(k, "big")
    h_len = 64
    assert em[0] == 0
    masked_seed, masked_db = em[1 : 1 + h_len], em[1 + h_len :]
    seed = bytes(a ^ b for a, b in zip(masked_seed, _mgf1_sha3(masked_db, h_len), strict=True))
    db = bytes(a ^ b for a, b in zip(masked_db, _mgf1_sha3(seed, k - h_len - 1), strict=True))
    assert db[:h_len] == hashlib.sha3_512(b"").digest()  # empty label
    rest = db[h_len:].lstrip(b"\x00")
    assert rest[0] == 1
    return rest[1:]


def test_wrapping_is_oaep_with_sha3_512_and_mgf1_sha3_512(key_files) -> None:
    public_file, private_file = key_files["k1"]
    private = RSA.import_key(private_file.read_bytes())
    dek = DataKey.generate().key
    wrapped = wrap_data_key(RSA.import_key(public_file.read_bytes()), dek)
    assert len(wrapped) == 256
    assert _oaep_sha3_decode_by_hand(private, wrapped) == dek


def test_data_key_field_format() -> None:
    text = format_data_key("k1", b"\x00\x01\xff")
    assert text == "k1:AAH/"
    assert parse_data_key(text) == ("k1", b"\x00\x01\xff")
    for bad in ("nokey", "a:b:c", ":AAH/", "k1:%%"):
        with pytest.raises(ValueError):
            parse_data_key(bad)


def test_data_key_repr_hides_the_key() -> None:
    key = DataKey.generate()
    assert key.key.hex() not in repr(key)
