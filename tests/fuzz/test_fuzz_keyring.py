"""Properties of the key ring file and of data-key unwrapping."""

from __future__ import annotations

import base64
import json
from functools import cache
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from tests.fuzz.support import counted, mutated, scratch_file
from tierflow.transform.errors import KeyRingError
from tierflow.transform.keyring import KeyRing


@cache
def ring() -> KeyRing:
    """One real 2048-bit ring for the session: generating RSA keys is the slow part."""
    directory = scratch_file("keys-marker", b"").parent / "keys"
    return KeyRing.generate(directory, "k1")


def _ring_text(active: str, public: str, private: str | None) -> bytes:
    files = {"public_key_file": public} | ({} if private is None else {"private_key_file": private})
    return json.dumps({"active": active, "keys": {"k1": files}}).encode()


ring_files = st.builds(
    _ring_text,
    st.sampled_from(["k1", "k2", ""]),
    st.sampled_from(["k1-public.pem", "k1-private.pem", "missing.pem", "keyring.json"]),
    st.none() | st.sampled_from(["k1-private.pem", "k1-public.pem", "missing.pem"]),
)


@given(st.one_of(st.binary(max_size=80), ring_files, mutated(ring_files)))
@counted
def test_key_ring_file_any_bytes(data: bytes) -> None:
    """A ring loads, or KeyRingError says what is wrong; never a bare OSError or KeyError."""
    path = Path(ring().path or "").with_name("fuzzed-keyring.json")
    path.write_bytes(data)
    try:
        loaded = KeyRing.load(path)
    except KeyRingError:
        return
    assert loaded.active_key_id in loaded.key_ids


@given(st.binary(max_size=300))
@counted
def test_unwrap_foreign_bytes_is_wrong_key(wrapped: bytes) -> None:
    """Bytes that were not wrapped under the key never unwrap silently (OAEP checks)."""
    try:
        ring().unwrap(f"k1:{base64.b64encode(wrapped).decode()}")
    except KeyRingError as exc:
        assert "'k1'" in str(exc)
        return
    raise AssertionError("foreign bytes unwrapped")


@given(st.binary(min_size=32, max_size=32))
@counted
def test_wrap_unwrap_round_trip(data_key: bytes) -> None:
    assert ring().unwrap(ring().wrap(data_key)) == data_key
