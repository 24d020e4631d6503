"""Key files for the transform and storage tests, generated once per session: RSA key generation
is the slow part."""

from __future__ import annotations

from pathlib import Path

import pytest

from tierflow.transform.keyring import KeyRing, load_key_pair, write_key_pair


@pytest.fixture(scope="session")
def key_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path]]:
    """(public, private) PEM files of three 2048-bit keys: k1, k2, k3."""
    directory = tmp_path_factory.mktemp("keys")
    return {key_id: write_key_pair(directory, key_id) for key_id in ("k1", "k2", "k3")}


@pytest.fixture
def make_ring(key_files):
    def make(active: str, *key_ids: str) -> KeyRing:
        ids = key_ids or (active,)
        return KeyRing(active, [load_key_pair(k, *key_files[k]) for k in ids])

    return make
