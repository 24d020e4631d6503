"""Every ``rsm.config.*`` name ``broker-config`` prints for the chunked layout is one Aiven
documents, spelled as Aiven spells it.

The plugin's README (``../shared/seeds/003*``) shows only a getting-started example: the core
names, the GCS backend and the chunk cache. The rest (the filesystem, S3 and Azure backends,
compression, encryption and its key pairs) are in Aiven's configuration reference, which
``../shared/reference/aiven-remote-layout.md`` §5 transcribes from the plugin's source (the
keys as the plugin sees them, without ``rsm.config.``; the backends' without ``storage.``).
A name passes when the README shows it whole, or the reference lists it. The README's
``rsm.config.storage.key.prefix`` is a known slip (Aiven PR #797): the reference's
``key.prefix`` is what the plugin reads, so that one must not come from the README.
Skipped where ``../shared`` is absent.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

import tierflow
from tierflow.cluster.broker_config import AIVEN_RSM, broker_config
from tierflow.cluster.broker_options import BrokerOptions
from tierflow.config import Settings
from tierflow.transform.keyring import KeyRing

SHARED = Path(tierflow.__file__).resolve().parents[2].parent / "shared"
PREFIX = "rsm.config."
STORAGE = "storage."
# The reference's §5.3 lists the backends' own keys without ``storage.``.
BACKEND_KEYS = ("s3.", "aws.", "gcs.", "azure.", "root", "overwrite.enabled")


def _readme() -> str:
    found = sorted((SHARED / "seeds").glob("003*"))
    if not found:
        pytest.skip(f"Aiven's README is not at {SHARED}/seeds/003*")
    return found[0].read_text(encoding="utf-8")


def _reference() -> str:
    path = SHARED / "reference" / "aiven-remote-layout.md"
    if not path.is_file():
        pytest.skip(f"no {path}")
    return path.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def printed(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, str]]:
    """The properties printed for a chunked bucket of each kind, with a two-key ring."""
    tmp_path = tmp_path_factory.mktemp("broker-config")
    ring = KeyRing.generate(tmp_path / "ring", "k1")
    ring.generate_key("k2", activate=True)
    ring.save()
    buckets = {
        str(tmp_path / "bucket"): BrokerOptions(),
        "s3://b/p": BrokerOptions(s3_region="eu-west-1", endpoint_url="http://localhost:9000"),
        "gs://b/p": BrokerOptions(endpoint_url="http://localhost:4443"),
        "abfs://c@account.dfs.core.windows.net/p": BrokerOptions(endpoint_url="http://h:1"),
    }
    found = []
    for url, options in buckets.items():
        settings = Settings.embedded(
            tmp_path, remote_storage=url, storage_prefix="x", keyring=ring.path
        )
        with_keys = replace(options, key_dir=tmp_path / "keys")
        found.append(broker_config(settings, with_keys).properties())
    return found


def _names(printed: list[dict[str, str]]) -> set[str]:
    return {name for properties in printed for name in properties}


def _documented_in_reference(name: str, reference: str) -> bool:
    """``name`` (without rsm.config.) as the reference lists it: in backticks in a table or a
    list, or as a key in one of its properties blocks; a backend's also without storage."""
    key = re.sub(r"^encryption\.key\.pairs\.[^.]+\.", "encryption.key.pairs.<id>.", name)
    forms = [key]
    backend_key = key.removeprefix(STORAGE)
    if key.startswith(STORAGE) and backend_key.startswith(BACKEND_KEYS):
        forms.append(backend_key)
    return any(
        re.search(rf"`{re.escape(form)}`|^\s*{re.escape(form)}=", reference, re.MULTILINE)
        for form in forms
    )


def test_every_rsm_config_name_is_one_aiven_documents(printed: list[dict[str, str]]) -> None:
    readme, reference = _readme(), _reference()
    names = sorted(n for n in _names(printed) if n.startswith(PREFIX))
    assert len(names) == 21  # the four backends, compression and both key pairs' files
    unknown = [
        name
        for name in names
        if name not in readme and not _documented_in_reference(name[len(PREFIX) :], reference)
    ]
    assert unknown == []


def test_the_readmes_own_names_are_printed_as_the_readme_spells_them(
    printed: list[dict[str, str]],
) -> None:
    readme = _readme()
    in_readme = {n for n in _names(printed) if n.startswith(PREFIX) and n in readme}
    assert in_readme >= {
        "rsm.config.chunk.size",
        "rsm.config.storage.backend.class",
        "rsm.config.storage.gcs.bucket.name",
    }
    assert f"remote.log.storage.manager.class.name={AIVEN_RSM}" in readme


def test_the_key_prefix_is_the_one_the_plugin_reads(printed: list[dict[str, str]]) -> None:
    readme, reference = _readme(), _reference()
    assert "rsm.config.storage.key.prefix" in readme  # the README's slip
    assert "`key.prefix`" in reference and "#797" in reference
    names = _names(printed)
    assert "rsm.config.key.prefix" in names and "rsm.config.storage.key.prefix" not in names


def test_each_backend_class_is_one_aiven_ships(printed: list[dict[str, str]]) -> None:
    """The README names GcsStorage in full, the reference each as ``…s3.S3Storage``."""
    documents = _readme() + _reference()
    classes = {p["rsm.config.storage.backend.class"] for p in printed}
    assert len(classes) == 4
    for name in classes:
        assert name.startswith("io.aiven.kafka.tieredstorage.storage."), name
        assert ".".join(name.split(".")[-2:]) in documents, name
