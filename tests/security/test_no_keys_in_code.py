"""Private keys come from files named by settings, never from DAG code or DAG parameters.

Three checks: the code that ships (dags/, plugins/, include/, spark_apps/ and the Airflow
settings file) holds no key material (PEM blocks, long base64 blobs, AWS-shaped keys, secrets
assigned to credential names, passwords in URLs); no DAG takes a key, secret or password as a
parameter or task argument; and the key ring is loaded only from the TIERFLOW_KEYRING path (or
``tierflow keys --keyring``), from files, never from anywhere else.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from tierflow.config import Settings
from tierflow.runtime import open_storage
from tierflow.transform.keyring import KeyRing

PROJECT = Path(__file__).resolve().parents[2]
SHIPPED = [PROJECT / d for d in ("dags", "plugins", "include", "spark_apps")]
SHIPPED_FILES = [PROJECT / "airflow_settings.yaml"]
TEXT_SUFFIXES = {".py", ".md", ".yaml", ".yml", ".json", ".cfg", ".ini", ".toml", ".txt", ".sh"}

KEY_MATERIAL = {
    "PEM block": re.compile(r"-----BEGIN [A-Z0-9 ]*KEY-----(?:\\n|\s)*[A-Za-z0-9+/=]{40}"),
    "base64 blob": re.compile(r"[A-Za-z0-9+/]{80,}={0,2}"),
    "AWS access key id": re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA|AROA|AIDA)[A-Z0-9]{16}\b"),
    "secret assigned to a credential name": re.compile(
        r"(?i)(?:secret_access_key|session_token|password|passwd|private_key)['\"]?\s*[:=]\s*"
        r"['\"][A-Za-z0-9/+=!@#$%^&*_.-]{8,}['\"]"
    ),
    "password in a URL": re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s/:@'\"]+:(?!\*\*\*@)[^\s@'\"{}]+@"),
}
# Names no DAG parameter or task argument may carry: keys come from files, not from runs.
SECRET_WORDS = ("key", "secret", "password", "passwd", "token", "credential", "pem", "private")


def shipped_files() -> list[Path]:
    found = [
        path
        for root in SHIPPED
        for path in root.rglob("*")
        if path.is_file() and path.suffix in TEXT_SUFFIXES and "__pycache__" not in path.parts
    ]
    return sorted(found + [p for p in SHIPPED_FILES if p.exists()])


def key_material_in(text: str) -> list[str]:
    return [
        f"{name}: {match.group(0)[:40]}..."
        for name, pattern in KEY_MATERIAL.items()
        for match in pattern.finditer(text)
    ]


def test_no_key_material_in_shipped_code():
    files = shipped_files()
    assert len(files) > 100 and any(p.parts[-2] == "dags" for p in files)
    found = {
        str(p.relative_to(PROJECT)): hits
        for p in files
        if (hits := key_material_in(p.read_text(errors="replace")))
    }
    assert found == {}


# Built at run time, so that this file holds no key material either.
PLANTED = {
    "PEM block": "KEY = '''-----BEGIN PRIVATE KEY-----\n" + "MIIEvQIBADANBgkqhkiG9w0B" * 3 + "'''",
    "PEM block (escaped newlines)": '"-----BEGIN RSA PRIVATE KEY-----\\n' + "QUJD" * 20 + '"',
    "base64 blob": "blob = '" + "TUlJRXZRSUJBREFOQmdrcWhraUc5dzBC" * 4 + "'",
    "AWS access key id": "aws_access_key_id='AKIA" + "Q2ZX" * 4 + "'",
    "secret assigned to a credential name": '{"secret_access_key": "' + "x9" * 12 + '"}',
    "password in a URL": "DB = 'postgresql://tierflow:" + "hunter2" + "@db.internal/tierflow'",
}


@pytest.mark.parametrize("name", list(PLANTED))
def test_the_scan_finds_planted_key_material(name: str):
    assert key_material_in(PLANTED[name]), name


def test_the_scan_leaves_ordinary_code_alone():
    ordinary = (
        "url = make_url(url).render_as_string(hide_password=True)  # user:***@host\n"
        "s3://bucket/prefix  sha256=" + "ab12" * 16 + "\n"
        "password = conn.password\nprivate_key_file = ring_dir / 'k1-private.pem'\n"
    )
    assert key_material_in(ordinary) == []


@pytest.fixture(scope="module")
def dagbag():
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(PROJECT / "dags"))
    assert bag.import_errors == {} and len(bag.dags) >= 6
    return bag


def secret_named(names: list[str]) -> list[str]:
    return [n for n in names if any(word in n.lower() for word in SECRET_WORDS)]


def test_no_dag_takes_a_key_as_a_parameter_or_task_argument(dagbag):
    for dag_id, dag in dagbag.dags.items():
        assert secret_named(list(dag.params)) == [], dag_id
        for task in dag.tasks:
            kwargs = {
                **(getattr(task, "op_kwargs", None) or {}),
                **(getattr(task, "partial_kwargs", {}).get("op_kwargs") or {}),
            }
            assert secret_named(list(kwargs)) == [], f"{dag_id}.{task.task_id}"
            fields = {f: getattr(task, f, None) for f in task.template_fields}
            rendered = json.dumps(fields, default=str)
            assert key_material_in(rendered) == [], f"{dag_id}.{task.task_id}"
            assert "keyring" not in rendered.lower(), f"{dag_id}.{task.task_id}"


def test_dag_files_never_touch_keys():
    pattern = re.compile(r"KeyRing|keyring|TIERFLOW_KEYRING|private_key|\.pem\b|import_key")
    for path in sorted((PROJECT / "dags").glob("*.py")):
        assert pattern.findall(path.read_text()) == [], path.name


def key_ring_loads() -> list[tuple[str, str]]:
    """(file, argument) of every KeyRing.load(...) call in the shipped Python code."""
    calls = []
    for path in shipped_files():
        if path.suffix != ".py":
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "load"
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "KeyRing"
            ):
                calls.append((path.relative_to(PROJECT).as_posix(), ast.unparse(node.args[0])))
    return calls


def test_the_key_ring_is_loaded_only_from_the_configured_path():
    """Every load reads settings.storage.keyring (TIERFLOW_KEYRING), or --keyring falling back
    to it."""
    calls = key_ring_loads()
    assert ("include/tierflow/storage/factory.py", "settings.storage.keyring") in calls
    assert {argument for _, argument in calls} <= {
        "settings.storage.keyring",
        "_ring_path(args)",
    }, calls
    readers = [
        p.relative_to(PROJECT).as_posix()
        for p in shipped_files()
        if p.suffix == ".py" and "import_key(" in p.read_text()
    ]
    assert readers == ["include/tierflow/transform/keyring.py"], "keys are parsed in one place"


@pytest.fixture(scope="module")
def ring_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("only-ring")
    KeyRing.generate(directory, "only-1")
    return directory


def test_without_tierflow_keyring_no_key_ring_is_found_anywhere(
    ring_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A keyring.json in the data dir or working directory, or key material in other
    variables, does not turn encryption on: only TIERFLOW_KEYRING does."""
    (tmp_path / "keyring.json").write_text((ring_dir / "keyring.json").read_text())
    monkeypatch.chdir(ring_dir)
    env = {
        "TIERFLOW_DATA_DIR": str(tmp_path),
        "TIERFLOW_PRIVATE_KEY": (ring_dir / "only-1-private.pem").read_text(),
        "TIERFLOW_KEY_FILE": str(ring_dir / "only-1-private.pem"),
    }
    assert open_storage(Settings.from_env(env)).key_ring is None
    ring = open_storage(Settings.from_env({**env, "TIERFLOW_KEYRING": "keyring.json"})).key_ring
    assert ring is not None and ring.path == ring_dir / "keyring.json"


def test_a_key_written_into_the_ring_file_itself_is_never_used(ring_dir: Path, tmp_path: Path):
    """The ring names PEM files; an inline key in an entry is ignored, not trusted."""
    raw = json.loads((ring_dir / "keyring.json").read_text())
    entry = raw["keys"]["only-1"]
    entry["public_key_file"] = str(ring_dir / entry["public_key_file"])
    entry["private_key"] = (ring_dir / entry.pop("private_key_file")).read_text()
    (tmp_path / "keyring.json").write_text(json.dumps(raw))
    pair = KeyRing.load(tmp_path / "keyring.json").key_pair("only-1")
    assert pair.private_key is None and pair.private_key_file is None
