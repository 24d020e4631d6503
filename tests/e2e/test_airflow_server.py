"""The parts of the local Airflow launcher that need no running Airflow."""

from __future__ import annotations

import json
import socket
import stat
from pathlib import Path

import pytest

from dev.airflow_server import (
    PASSWORD_FILE,
    admin_password,
    choose_port,
    expected_dag_files,
    is_airflow_process,
    server_env,
)
from tierflow.cli import build_parser

PROJECT = Path(__file__).resolve().parents[2]


def test_admin_password_is_generated_once_and_kept_private(tmp_path: Path):
    password = admin_password(tmp_path)
    path = tmp_path / PASSWORD_FILE
    assert json.loads(path.read_text()) == {"admin": password}
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert admin_password(tmp_path) == password, "the same home keeps its login"


def test_a_taken_default_port_falls_back_to_a_free_one():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        assert choose_port(taken) == taken, "an explicit port is used as given"
        assert choose_port(0) not in (0, taken)


def test_environment_is_private_loopback_and_passes_tierflow_settings_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("TIERFLOW_DATA_DIR", "/somewhere")
    monkeypatch.setenv("AIRFLOW__CORE__EXECUTOR", "CeleryExecutor")
    env = server_env(PROJECT, tmp_path, 18080, {"TIERFLOW_KEYRING": "/keys.json"})
    assert env["AIRFLOW_HOME"] == str(tmp_path)
    assert env["AIRFLOW__CORE__DAGS_FOLDER"] == str(PROJECT / "dags")
    assert env["AIRFLOW__CORE__PLUGINS_FOLDER"] == str(PROJECT / "plugins")
    assert env["AIRFLOW__CORE__LOAD_EXAMPLES"] == "False"
    assert env["AIRFLOW__CORE__EXECUTOR"] == "LocalExecutor"
    assert env["AIRFLOW__API__HOST"] == "127.0.0.1"
    assert env["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"] == "http://127.0.0.1:18080/execution/"
    assert env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] == f"sqlite:///{tmp_path / 'airflow.db'}"
    assert env["TIERFLOW_DATA_DIR"] == "/somewhere"
    assert env["TIERFLOW_KEYRING"] == "/keys.json"


def test_every_dag_file_is_expected_to_be_parsed():
    assert expected_dag_files(PROJECT / "dags") == {
        f"{name}.py"
        for name in (
            "diskless_gc",
            "diskless_merge",
            "iceberg_export",
            "index_cache",
            "partition_restore",
            "remote_compaction",
            "remote_log_metadata",
            "remote_partition_removal",
            "remote_reconcile",
            "remote_scrub",
            "retention_expiry",
            "segment_copy",
            "topic_disablement",
        )
    }


@pytest.mark.parametrize(
    ("cmdline", "ours"),
    [
        pytest.param(
            ["airflow api_server -- host:127.0.0.1 port:8080"], True, id="api-server-retitled"
        ),
        pytest.param(["airflow worker -- LocalExecutor: <idle>"], True, id="worker-retitled"),
        pytest.param(
            ["/venv/bin/python3", "-m", "airflow", "scheduler"], True, id="python-m-airflow"
        ),
        pytest.param(["/venv/bin/airflow", "dag-processor"], True, id="airflow-script"),
        pytest.param(
            ["tail", "-f", "/data/airflow-home/logs/scheduler.log"],
            False,
            id="tail-of-an-airflow-log",
        ),
        pytest.param(["-bash"], False, id="login-shell"),
        pytest.param([], False, id="no-command-line"),
    ],
)
def test_only_airflow_processes_count_as_leftovers(cmdline: list[str], ours: bool):
    assert is_airflow_process(cmdline) is ours


def test_serve_help_says_what_starts_and_how_to_log_in(capsys: pytest.CaptureFixture[str]):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["airflow", "serve", "--help"])
    text = capsys.readouterr().out
    for words in ("api-server", "scheduler", "dag-processor", "airflow_settings.yaml", "admin"):
        assert words in text
    assert "--port" in text and "--home" in text
