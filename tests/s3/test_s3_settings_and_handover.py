"""S3 settings, and the connection handed from an Airflow task to Spark executors: resolved
from the Airflow connection, carried in one environment variable, used without Airflow."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.moto_server import (
    ACCESS_KEY_ID,
    REGION,
    SECRET_ACCESS_KEY,
    SESSION_TOKEN,
    MotoServer,
)
from tierflow.config import InvalidSettingError, Settings
from tierflow.storage.factory import open_remote_storage
from tierflow.storage.handover import HANDOVER_ENV, from_json, handed_over, take_handed_over
from tierflow.storage.s3 import S3ObjectStore
from tierflow.storage.s3_handover import S3ClientSpec
from tierflow.tasks.segment_copy import spark_bucket_handover

CREDENTIALS = (ACCESS_KEY_ID, SECRET_ACCESS_KEY, SESSION_TOKEN)


def s3_settings(tmp_path: Path, bucket: str, **overrides: object) -> Settings:
    return Settings.embedded(tmp_path, remote_storage=f"s3://{bucket}/tiered", **overrides)


def test_s3_settings_round_trip_without_credentials(tmp_path: Path, s3_bucket: str):
    settings = s3_settings(tmp_path, s3_bucket, aws_conn_id="tiered_s3", s3_part_size=6 << 20)
    env = settings.as_env()
    assert Settings.from_env(env) == settings
    assert env["TIERFLOW_REMOTE_STORAGE"] == f"s3://{s3_bucket}/tiered"
    assert (env["TIERFLOW_AWS_CONN_ID"], env["TIERFLOW_S3_PART_SIZE"]) == ("tiered_s3", "6291456")
    assert not any(secret in json.dumps(env) for secret in CREDENTIALS)
    defaults = Settings.from_env({"TIERFLOW_DATA_DIR": str(tmp_path)})
    assert (defaults.storage.aws_conn_id, defaults.storage.s3_part_size) == (
        "aws_default",
        8 * 1024 * 1024,
    )


def test_part_size_below_5_mib_is_refused(tmp_path: Path):
    env = {**Settings.embedded(tmp_path).as_env(), "TIERFLOW_S3_PART_SIZE": str(4 << 20)}
    with pytest.raises(InvalidSettingError, match=r"TIERFLOW_S3_PART_SIZE=.*at least 5242880"):
        Settings.from_env(env)


def test_the_configured_connection_and_part_size_are_used(
    tmp_path: Path, moto_server: MotoServer, s3_bucket: str, monkeypatch: pytest.MonkeyPatch
):
    for name, value in moto_server.connection_env("tiered_s3").items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AIRFLOW_CONN_AWS_DEFAULT")
    settings = s3_settings(tmp_path, s3_bucket, aws_conn_id="tiered_s3", s3_part_size=6 << 20)
    rsm = open_remote_storage(settings)
    assert isinstance(rsm.objects, S3ObjectStore)
    assert (rsm.objects.bucket, rsm.objects.prefix) == (s3_bucket, "tiered/")
    assert rsm.objects.part_size == 6 << 20
    rsm.objects.put_bytes("k", b"v")
    assert moto_server.client().get_object(Bucket=s3_bucket, Key="tiered/k")["Body"].read() == b"v"


def test_the_spec_resolves_the_airflow_connection_and_hides_its_secrets(
    moto_server: MotoServer, s3_bucket: str
):
    spec = S3ClientSpec.from_connection("aws_default")
    assert (spec.endpoint_url, spec.region_name) == (moto_server.endpoint, REGION)
    assert (spec.access_key_id, spec.secret_access_key, spec.session_token) == CREDENTIALS
    assert not any(secret in repr(spec) + str(spec) for secret in CREDENTIALS)
    assert S3ClientSpec.from_json(spec.to_json()) == spec
    client = spec.client()
    client.put_object(Bucket=s3_bucket, Key="from-spec", Body=b"ok")
    assert client.get_object(Bucket=s3_bucket, Key="from-spec")["Body"].read() == b"ok"


def test_the_spec_carries_the_connections_botocore_options(
    moto_server: MotoServer, s3_bucket: str, monkeypatch: pytest.MonkeyPatch
):
    connection = json.loads(moto_server.connection_env()["AIRFLOW_CONN_AWS_DEFAULT"])
    connection["extra"]["config_kwargs"] = {"s3": {"addressing_style": "path"}}
    monkeypatch.setenv("AIRFLOW_CONN_PATH_STYLE", json.dumps(connection))
    spec = S3ClientSpec.from_connection("path_style")
    assert spec.config_kwargs == {"s3": {"addressing_style": "path"}}
    assert hash(spec) == hash(S3ClientSpec.from_json(spec.to_json())), "a cache key for workers"
    client = spec.client()
    assert client.meta.config.s3 == {"addressing_style": "path"}
    assert client.meta.config.retries["mode"] == "standard"
    client.put_object(Bucket=s3_bucket, Key="styled", Body=b"ok")


def test_handover_lives_in_the_environment_only_while_needed(tmp_path: Path):
    environ: dict[str, str] = {"OTHER": "1"}
    spec = S3ClientSpec("http://127.0.0.1:1", "eu-west-1", access_key_id="a", secret_access_key="b")
    with handed_over(spec, environ):
        assert from_json(environ[HANDOVER_ENV]) == spec
        copy = dict(environ)
    assert environ == {"OTHER": "1"}
    settings = s3_settings(tmp_path, "bucket")
    assert take_handed_over(settings, copy) == spec
    assert HANDOVER_ENV not in copy, "the driver takes it out of its environment"
    assert take_handed_over(settings, {}) == S3ClientSpec(), "by hand: boto3's credential chain"
    assert take_handed_over(Settings.embedded(tmp_path), {}) is None, "a local bucket: none"


def test_the_task_hands_over_only_for_an_s3_bucket(
    tmp_path: Path, s3_bucket: str, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.delenv(HANDOVER_ENV, raising=False)
    with spark_bucket_handover(Settings.embedded(tmp_path)):
        assert HANDOVER_ENV not in os.environ
    with spark_bucket_handover(s3_settings(tmp_path, s3_bucket)):
        handed = from_json(os.environ[HANDOVER_ENV])
    assert handed.secret_access_key == SECRET_ACCESS_KEY
    assert HANDOVER_ENV not in os.environ


EXECUTOR = """
import json, sys
from tierflow.config import Settings
from tierflow.engine.worker import executor_storage
from tierflow.storage.s3_handover import S3ClientSpec

settings = Settings.from_env()
rsm = executor_storage(settings, S3ClientSpec.from_json(sys.argv[1]))
rsm.objects.put_bytes("from-executor", b"no airflow here")
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] == "airflow")))
"""


def test_executors_write_with_plain_boto3_and_never_import_airflow(
    tmp_path: Path, moto_server: MotoServer, s3_bucket: str
):
    spec = S3ClientSpec(
        moto_server.endpoint,
        REGION,
        access_key_id=ACCESS_KEY_ID,
        secret_access_key=SECRET_ACCESS_KEY,
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW_CONN_")}
    env.update(s3_settings(tmp_path, s3_bucket).as_env())
    done = subprocess.run(
        [sys.executable, "-c", EXECUTOR, spec.to_json()],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(done.stdout.splitlines()[-1]) == []
    stored = moto_server.client().get_object(Bucket=s3_bucket, Key="tiered/from-executor")
    assert stored["Body"].read() == b"no airflow here"
