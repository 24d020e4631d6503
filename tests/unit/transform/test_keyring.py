"""The key ring file: load, generate, add, activate, and errors that name the key id."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tierflow.transform.encryption import DataKey
from tierflow.transform.errors import KeyNotFoundError, KeyRingError, WrongKeyError
from tierflow.transform.keyring import KeyRing, load_key_pair


def test_generate_writes_aiven_readable_pem_files(tmp_path: Path) -> None:
    ring = KeyRing.generate(tmp_path / "ring", "main")
    assert ring.path == tmp_path / "ring" / "keyring.json"
    assert json.loads(ring.path.read_text()) == {
        "active": "main",
        "keys": {
            "main": {"public_key_file": "main-public.pem", "private_key_file": "main-private.pem"}
        },
    }
    public = (tmp_path / "ring" / "main-public.pem").read_text()
    private_file = tmp_path / "ring" / "main-private.pem"
    assert public.startswith("-----BEGIN PUBLIC KEY-----")  # X.509 SubjectPublicKeyInfo
    assert private_file.read_text().startswith("-----BEGIN PRIVATE KEY-----")  # PKCS#8
    assert private_file.stat().st_mode & 0o777 == 0o600
    with pytest.raises(KeyRingError, match="already exists"):
        KeyRing.generate(tmp_path / "ring", "other")


def test_load_resolves_paths_relative_to_the_file(tmp_path: Path, key_files) -> None:
    ring = KeyRing("k1", [load_key_pair("k1", *key_files["k1"])])
    ring.add_key("k2", *key_files["k2"], activate=True)
    saved = ring.save(tmp_path / "conf" / "ring.json")
    loaded = KeyRing.load(saved)
    assert loaded.active_key_id == "k2" and loaded.key_ids == ["k1", "k2"]
    field = ring.wrap(b"k" * 32)
    assert field.startswith("k2:")
    assert loaded.unwrap(field) == b"k" * 32


def test_rotation_keeps_old_keys_readable(key_files) -> None:
    ring = KeyRing("k1", [load_key_pair("k1", *key_files["k1"])])
    dek = DataKey.generate().key
    old = ring.wrap(dek)
    ring.add_key("k2", *key_files["k2"], activate=True)
    assert ring.active_key_id == "k2"
    assert ring.wrap(dek).startswith("k2:")
    assert ring.unwrap(old) == dek


def test_unknown_key_id_is_named(make_ring) -> None:
    field = make_ring("k1").wrap(b"x" * 32)
    with pytest.raises(KeyNotFoundError, match=r"'k1' is not in the key ring.*k2") as caught:
        make_ring("k2").unwrap(field)
    assert caught.value.key_id == "k1"


def test_wrong_private_key_for_an_id_is_named(key_files, tmp_path: Path) -> None:
    field = KeyRing("k1", [load_key_pair("k1", *key_files["k1"])]).wrap(b"x" * 32)
    # An id whose files are really another key: the data key does not unwrap.
    impostor = KeyRing("k1", [load_key_pair("k1", *key_files["k2"])])
    with pytest.raises(WrongKeyError, match="'k1'") as caught:
        impostor.unwrap(field)
    assert caught.value.key_id == "k1"


def test_mismatched_pair_and_bad_ids_are_refused(key_files) -> None:
    public_k1, _ = key_files["k1"]
    _, private_k2 = key_files["k2"]
    with pytest.raises(KeyRingError, match="not the private key"):
        load_key_pair("k1", public_k1, private_k2)
    ring = KeyRing("k1", [load_key_pair("k1", *key_files["k1"])])
    for bad in ("", "a:b", " x"):
        with pytest.raises(KeyRingError, match="invalid key id"):
            ring.add_key(bad, *key_files["k2"], activate=False)
    with pytest.raises(KeyRingError, match="already"):
        ring.add_key("k1", *key_files["k2"], activate=False)
    with pytest.raises(KeyNotFoundError):
        ring.activate("nope")


def test_public_only_key_wraps_but_cannot_unwrap(key_files) -> None:
    ring = KeyRing("k1", [load_key_pair("k1", key_files["k1"][0], None)])
    field = ring.wrap(b"x" * 32)
    with pytest.raises(WrongKeyError, match="no private key"):
        ring.unwrap(field)


@pytest.mark.parametrize(
    "content",
    ['{"active": "zz", "keys": {}}', "not json", '{"active": "a"}', "[]"],
)
def test_broken_ring_files_are_reported(tmp_path: Path, content: str) -> None:
    path = tmp_path / "keyring.json"
    path.write_text(content)
    with pytest.raises(KeyRingError, match=str(path)):
        KeyRing.load(path)


def test_generate_key_adds_beside_the_ring(tmp_path: Path) -> None:
    ring = KeyRing.generate(tmp_path, "k1")
    ring.generate_key("k2", activate=True)
    ring.save()
    loaded = KeyRing.load(tmp_path / "keyring.json")
    assert loaded.active_key_id == "k2"
    assert loaded.key_pair("k2").public_key_file == (tmp_path / "k2-public.pem").resolve()
