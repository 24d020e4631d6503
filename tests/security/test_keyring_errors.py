"""Key ring mistakes give errors that name files and key ids, never key material.

The natural leak: a private key pasted where a file path belongs (TIERFLOW_KEYRING, a ring
entry, ``--public-key-file``). Every key ring error names the path it could not read, so that
"path" would be printed whole. Also checked: a corrupt, truncated or mismatched PEM, swapped
files, and a segment whose data key the ring cannot unwrap.
"""

from __future__ import annotations

import json
import shutil
import traceback
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.security.cli import tierflow
from tests.security.needles import Secret, private_key_secret
from tests.security.scan import find_secrets, text
from tierflow.config import Settings
from tierflow.runtime import open_storage
from tierflow.transform.errors import KeyRingError, WrongKeyError
from tierflow.transform.keyring import KeyRing


@pytest.fixture(scope="module")
def ring_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("ring")
    KeyRing.generate(directory, "k1")
    KeyRing.generate(directory / "other", "k2")
    return directory


@pytest.fixture
def ring(ring_dir: Path, tmp_path: Path) -> Path:
    """A private copy of the ring to break: keyring.json and its PEM files."""
    shutil.copytree(ring_dir, tmp_path / "ring")
    return tmp_path / "ring"


@pytest.fixture(scope="module")
def secrets(ring_dir: Path) -> list[Secret]:
    return [
        private_key_secret(ring_dir / "k1-private.pem", ring_dir / "k1-public.pem"),
        private_key_secret(ring_dir / "other/k2-private.pem", ring_dir / "other/k2-public.pem"),
    ]


def key_ring_error(action: Callable[[], object]) -> str:
    """The error's message and its whole formatted traceback."""
    with pytest.raises(KeyRingError) as caught:
        action()
    return str(caught.value) + "".join(traceback.format_exception(caught.value))


def assert_clean(message: str, secrets: list[Secret]) -> None:
    findings = find_secrets([text("error", message)], secrets)
    assert findings == [], [str(f) for f in findings]


def pem(ring: Path, name: str = "k1-private.pem") -> str:
    return (ring / name).read_text()


def edit_entry(ring: Path, **entry: str) -> Path:
    raw = json.loads((ring / "keyring.json").read_text())
    raw["keys"]["k1"].update(entry)
    (ring / "keyring.json").write_text(json.dumps(raw))
    return ring / "keyring.json"


@pytest.mark.parametrize("form", ["pem", "base64 on one line"])
def test_a_key_in_tierflow_keyring_is_refused_unseen(
    ring: Path, tmp_path: Path, secrets: list[Secret], form: str
):
    key = pem(ring) if form == "pem" else "".join(pem(ring).splitlines()[1:-1])
    # Settings resolves the "path" against the working directory, as from the environment.
    settings = Settings.from_env({"TIERFLOW_DATA_DIR": str(tmp_path), "TIERFLOW_KEYRING": key})
    message = key_ring_error(lambda: open_storage(settings))
    assert "looks like key material" in message
    assert_clean(message, secrets)
    run = tierflow({"TIERFLOW_KEYRING": key, "TIERFLOW_DATA_DIR": str(tmp_path)}, "keys", "list")
    assert run.returncode == 2 and "looks like key material" in run.output, run.output
    assert run.leaks(secrets) == []


@pytest.mark.parametrize("field", ["private_key_file", "public_key_file"])
def test_a_key_pasted_into_the_ring_file_is_refused_unseen(
    ring: Path, secrets: list[Secret], field: str
):
    ring_file = edit_entry(ring, **{field: pem(ring)})
    message = key_ring_error(lambda: KeyRing.load(ring_file))
    assert str(ring_file) in message and "'k1'" in message
    assert_clean(message, secrets)


def test_a_key_given_to_keys_add_is_refused_unseen(ring: Path, secrets: list[Secret]):
    run = tierflow(
        {},
        "keys",
        "add",
        "--keyring",
        str(ring / "keyring.json"),
        "--key-id",
        "k3",
        "--public-key-file",
        pem(ring, "other/k2-public.pem"),
        "--private-key-file",
        pem(ring, "other/k2-private.pem"),
    )
    assert run.returncode == 2 and "looks like key material" in run.output, run.output
    assert run.leaks(secrets) == []


def corrupt(ring: Path) -> None:
    lines = pem(ring).splitlines()
    lines[6] = lines[6][:20] + "!!!!" + lines[6][24:]
    (ring / "k1-private.pem").write_text("\n".join(lines) + "\n")


def truncate(ring: Path) -> None:
    (ring / "k1-private.pem").write_text("\n".join(pem(ring).splitlines()[:12]) + "\n")


def strip_armour(ring: Path) -> None:
    (ring / "k1-private.pem").write_text("".join(pem(ring).splitlines()[1:-1]))


def mismatch(ring: Path) -> None:
    shutil.copy(ring / "other/k2-private.pem", ring / "k1-private.pem")


def swap(ring: Path) -> None:
    edit_entry(ring, public_key_file="k1-private.pem", private_key_file="k1-public.pem")


@pytest.mark.parametrize("damage", [corrupt, truncate, strip_armour, mismatch, swap])
def test_a_broken_key_file_is_named_but_not_shown(
    ring: Path, tmp_path: Path, secrets: list[Secret], damage: Callable[[Path], None]
):
    damage(ring)
    message = key_ring_error(lambda: KeyRing.load(ring / "keyring.json"))
    assert "k1" in message and ".pem" in message
    assert_clean(message, secrets)
    if damage in (corrupt, mismatch):  # and as the CLI prints it (the same message)
        env = {"TIERFLOW_KEYRING": str(ring / "keyring.json"), "TIERFLOW_DATA_DIR": str(tmp_path)}
        run = tierflow(env, "keys", "list")
        assert run.returncode == 2 and str(ring) in run.output, run.output
        assert run.leaks(secrets) == []


def test_the_wrong_key_for_a_data_key_names_the_id_and_file_only(ring: Path, secrets: list[Secret]):
    wrapped = KeyRing.load(ring / "keyring.json").wrap(b"\x01" * 32)
    mismatch(ring)  # the ring now holds k2's private key under id k1 (no load-time check)
    shutil.copy(ring / "other/k2-public.pem", ring / "k1-public.pem")
    with pytest.raises(WrongKeyError) as caught:
        KeyRing.load(ring / "keyring.json").unwrap(wrapped)
    message = str(caught.value) + "".join(traceback.format_exception(caught.value))
    assert "k1" in message and "k1-private.pem" in message
    assert_clean(message, secrets)
