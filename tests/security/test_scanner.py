"""The leak scanner finds every form of every secret wherever it is planted, and nothing else.

The other security tests pass when the scanner finds nothing; these show it would have found
a leak: in a log line, a binary file, a SQLite table (as text and as a blob) or a dump.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.security.needles import Secret, aws_secrets, pg_password_secret, private_key_secret
from tests.security.scan import files_under, find_secrets, sqlite_dump, text
from tierflow.transform.keyring import KeyRing


@pytest.fixture(scope="module")
def key_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    directory = tmp_path_factory.mktemp("scanner-keys")
    KeyRing.generate(directory, "scan")
    return directory / "scan-private.pem", directory / "scan-public.pem"


@pytest.fixture(scope="module")
def secrets(key_files: tuple[Path, Path]) -> list[Secret]:
    return [*aws_secrets(), pg_password_secret(), private_key_secret(*key_files)]


def all_forms(secrets: list[Secret]) -> list[tuple[str, str, bytes]]:
    return [(s.name, form, needle) for s in secrets for form, needle in s.forms.items()]


def test_every_form_is_found_in_a_log_file_and_in_a_binary_file(
    tmp_path: Path, secrets: list[Secret]
):
    for number, (_, _, needle) in enumerate(all_forms(secrets)):
        (tmp_path / f"{number}.log").write_bytes(b"2026-01-01 INFO line " + needle + b"\n")
        (tmp_path / f"{number}.bin").write_bytes(b"\x00\xff" + needle + b"\x00")
    found = {(f.place, f.secret, f.form) for f in find_secrets(files_under(tmp_path), secrets)}
    for number, (name, form, _) in enumerate(all_forms(secrets)):
        for suffix in ("log", "bin"):
            assert (str(tmp_path / f"{number}.{suffix}"), name, form) in found


def test_every_form_is_found_in_a_sqlite_table_as_text_and_as_a_blob(
    tmp_path: Path, secrets: list[Secret]
):
    db = tmp_path / "airflow.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE xcom (key TEXT, value TEXT, raw BLOB)")
        for name, form, needle in all_forms(secrets):
            # As text (the form decoded where it can be) and as bytes a text dump would hex.
            value = f"{{'{name}': '{needle.decode(errors='replace')}'}}"
            conn.execute("INSERT INTO xcom VALUES (?, ?, ?)", (form, value, needle))
    findings = find_secrets(sqlite_dump(db), secrets)
    from_table = {(f.secret, f.form) for f in findings if f.place == "airflow.db:xcom"}
    assert from_table == {(name, form) for name, form, _ in all_forms(secrets)}


def test_a_directory_can_be_left_out_but_nothing_else(tmp_path: Path, secrets: list[Secret]):
    keys, logs = tmp_path / "keys", tmp_path / "logs"
    keys.mkdir()
    logs.mkdir()
    (keys / "k.pem").write_bytes(secrets[-1].forms["pem"])
    (logs / "task.log").write_bytes(b"no secret here")
    assert find_secrets(files_under(tmp_path, exclude=[keys]), secrets) == []
    assert find_secrets(files_under(tmp_path), secrets)


def test_the_public_key_and_ordinary_output_are_not_taken_for_secrets(
    key_files: tuple[Path, Path], secrets: list[Secret]
):
    private, public = key_files
    haystacks = [
        text("public key", public.read_bytes()),
        text("a task log", "copied 9 segments to s3://bucket/prefix as tierflow_sec ***"),
    ]
    assert find_secrets(haystacks, secrets) == []
    assert find_secrets([text("private key", private.read_bytes())], secrets)


def test_a_single_pem_line_of_the_private_key_is_enough(key_files: tuple[Path, Path]):
    secret = private_key_secret(*key_files)
    lines = [form for label, form in secret.forms.items() if label.startswith("pem-line-")]
    assert len(lines) > 15, "a 2048-bit PKCS#8 key has ~25 lines, most of them private"
    findings = find_secrets([text("log", b"...\n" + lines[7] + b"\n...")], [secret])
    assert [f.form for f in findings] == ["pem-line-7"]
