"""``tierflow broker-config``: the properties on stdout (or as JSON), the key files' paths
and never a key, and bad input as one line naming the setting, exit 2."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tierflow.cli import main
from tierflow.cluster.broker_config import AIVEN_RSM, LOCAL_TIERED_STORAGE
from tierflow.transform.keyring import KeyRing


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Only tierflow's defaults under ``tmp_path``: a directory bucket, the chunked layout."""
    for name in [n for n in os.environ if n.startswith("TIERFLOW_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("TIERFLOW_DATA_DIR", str(tmp_path))
    return tmp_path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["broker-config", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def parse_properties(text: str) -> dict[str, str]:
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    return dict(line.split("=", 1) for line in lines)


def test_prints_the_properties_and_json_prints_the_same(env: Path, capsys) -> None:
    code, out, err = run(capsys)
    assert (code, err) == (0, "")
    printed = parse_properties(out)
    assert printed["remote.log.storage.manager.class.name"] == AIVEN_RSM
    assert printed["rsm.config.storage.root"] == str(env.resolve() / "bucket")
    assert out.startswith("# Kafka broker settings for tierflow's bucket ")
    code, out, _ = run(capsys, "--json")
    assert code == 0 and json.loads(out) == printed


def test_options_reach_the_properties(env: Path, capsys) -> None:
    code, out, _ = run(capsys, "--listener-name", "INTERNAL", "--class-path", "/opt/a/*")
    printed = parse_properties(out)
    assert code == 0
    assert printed["remote.log.metadata.manager.listener.name"] == "INTERNAL"
    assert printed["remote.log.storage.manager.class.path"] == "/opt/a/*"


def test_kafka_local(env: Path, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIERFLOW_STORAGE_LAYOUT", "kafka-local")
    code, out, _ = run(capsys, "--json")
    assert code == 0
    assert json.loads(out)["remote.log.storage.manager.class.name"] == LOCAL_TIERED_STORAGE
    assert json.loads(out)["rsm.config.dir"] == str(env.resolve() / "bucket")


def test_keys_are_written_and_only_their_paths_printed(
    env: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    ring = KeyRing.generate(env / "ring", "k1")
    monkeypatch.setenv("TIERFLOW_KEYRING", str(ring.path))
    code, out, err = run(capsys, "--key-dir", str(env / "broker-keys"))
    assert code == 0
    private = env / "broker-keys" / "k1-private.pem"
    assert parse_properties(out)["rsm.config.encryption.key.pairs.k1.private.key.file"] == str(
        private
    )
    assert err == f"wrote 1 key pair(s) to {env / 'broker-keys'} (mode 0600)\n"
    body = "".join(private.read_text().splitlines()[1:-1])
    assert body[:40] not in out.replace("\n", "") and "PRIVATE KEY-----" not in out + err


@pytest.mark.parametrize(
    ("variables", "argv", "starts"),
    [
        pytest.param(
            {"TIERFLOW_STORAGE_LAYOUT": "plain"},
            (),
            "TIERFLOW_STORAGE_LAYOUT=plain: ",
            id="unknown-layout",
        ),
        pytest.param(
            {"TIERFLOW_STORAGE_LAYOUT": "kafka-local", "TIERFLOW_REMOTE_STORAGE": "s3://b/p"},
            (),
            "TIERFLOW_REMOTE_STORAGE=s3://b/p: the kafka-local layout needs a directory",
            id="kafka-local-layout-on-a-bucket",
        ),
        pytest.param(
            {},
            ("--listener-name", "a b"),
            "--listener-name 'a b': ",
            id="listener-name-with-a-space",
        ),
        pytest.param(
            {},
            ("--key-dir", "keys"),
            "--key-dir: TIERFLOW_KEYRING is not set",
            id="key-dir-without-a-key-ring",
        ),
        pytest.param(
            {"TIERFLOW_CHUNK_SIZE": "lots"},
            (),
            "TIERFLOW_CHUNK_SIZE=",
            id="chunk-size-not-a-number",
        ),
        pytest.param(
            {"TIERFLOW_KEYRING": "/no/such/ring.json"},
            (),
            "key ring /no/such/ring.json",
            id="missing-key-ring",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    env: Path, capsys, monkeypatch: pytest.MonkeyPatch, variables, argv, starts: str
) -> None:
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    code, out, err = run(capsys, *argv)
    assert (code, out) == (2, "")
    assert err.startswith(f"tierflow: error: {starts}") and err.count("\n") == 1, err


def test_help_says_what_it_is_for(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["broker-config", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "tier to, and read, the bucket tierflow writes" in text
    assert "handed from tierflow to the brokers" in text
    for option in ("--listener-name", "--class-path", "--key-dir", "--json"):
        assert option in text
