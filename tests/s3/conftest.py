"""S3 tests share one key ring: RSA key generation is the slow part."""

from __future__ import annotations

import pytest

from tierflow.transform.keyring import KeyRing


@pytest.fixture(scope="session")
def key_ring(tmp_path_factory: pytest.TempPathFactory) -> KeyRing:
    return KeyRing.generate(tmp_path_factory.mktemp("s3-keys"), "s3-test-1")
