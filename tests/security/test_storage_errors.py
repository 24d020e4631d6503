"""S3 failures and a bucket URL with credentials in it: no AWS secret in any message.

A moto_server of its own enforces IAM authentication (the session's server accepts any
credentials), with a user allowed S3 and a user allowed nothing. Each failure is checked as an
exception (text and formatted traceback), as ``tierflow reconcile`` prints it, and, for the
URL with credentials, as an Airflow task log would show it after the secrets masker.
"""

from __future__ import annotations

import json
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import boto3
import pytest

from tests.security.cli import tierflow
from tests.security.needles import (
    AWS_ACCESS_KEY_ID,
    AWS_SECRET_ACCESS_KEY,
    Secret,
    aws_secrets,
    text_forms,
)
from tests.security.scan import find_secrets, text
from tests.security.world import aws_connection_env
from tests.support.moto_server import REGION, running_moto_server
from tierflow.config import Settings
from tierflow.rsm import RemoteStorageError
from tierflow.storage.factory import UnsupportedStorageURLError, open_object_store

S3_ALLOWED = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}],
}
# Requests moto serves before it starts checking credentials: the IAM set-up below.
SETUP_REQUESTS = 5


@dataclass(frozen=True)
class AuthS3:
    endpoint: str
    bucket: str
    writer: dict[str, str]  # AccessKeyId, SecretAccessKey of a user allowed s3:*
    nobody: dict[str, str]  # a user with no policy at all


@pytest.fixture(scope="module")
def auth_s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AuthS3]:
    log = tmp_path_factory.mktemp("moto-auth") / "moto_server.log"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("INITIAL_NO_AUTH_ACTION_COUNT", str(SETUP_REQUESTS))
        server = running_moto_server(log)
        moto = server.__enter__()
    try:
        iam = boto3.client(
            "iam",
            endpoint_url=moto.endpoint,
            region_name=REGION,
            aws_access_key_id="setup",
            aws_secret_access_key="setup",
        )
        keys = {}
        for user in ("writer", "nobody"):
            iam.create_user(UserName=user)
            keys[user] = iam.create_access_key(UserName=user)["AccessKey"]
        iam.put_user_policy(
            UserName="writer", PolicyName="s3", PolicyDocument=json.dumps(S3_ALLOWED)
        )
        bucket = "tierflow-sec-auth"
        client(moto.endpoint, **_pair(keys["writer"])).create_bucket(Bucket=bucket)
        yield AuthS3(moto.endpoint, bucket, keys["writer"], keys["nobody"])
    finally:
        server.__exit__(None, None, None)


def _pair(key: dict[str, str]) -> dict[str, str]:
    return {"key_id": key["AccessKeyId"], "secret": key["SecretAccessKey"]}


def client(endpoint: str, key_id: str, secret: str):
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name=REGION,
        aws_access_key_id=key_id,
        aws_secret_access_key=secret,
    )


def connection(auth_s3: AuthS3, case: str) -> tuple[dict[str, str], list[Secret]]:
    """The aws_default connection of a failure case, and the secrets it must not leak."""
    if case == "unknown key":  # every credential the distinctive fake one
        return aws_connection_env(auth_s3.endpoint), aws_secrets()
    login, password = {
        "wrong secret": (auth_s3.writer["AccessKeyId"], AWS_SECRET_ACCESS_KEY),
        "access denied": (auth_s3.nobody["AccessKeyId"], auth_s3.nobody["SecretAccessKey"]),
    }[case]
    conn = {
        "conn_type": "aws",
        "login": login,
        "password": password,
        "extra": {"endpoint_url": auth_s3.endpoint, "region_name": REGION},
    }
    secret = Secret(f"{case} secret", text_forms(password))
    return {"AIRFLOW_CONN_AWS_DEFAULT": json.dumps(conn)}, [secret]


def leaks(secrets: list[Secret], *texts: str) -> list[str]:
    found = find_secrets([text(f"text {n}", t) for n, t in enumerate(texts)], secrets)
    return [str(f) for f in found]


CASES = {
    "unknown key": "InvalidAccessKeyId",
    "wrong secret": "SignatureDoesNotMatch",
    "access denied": "AccessDenied",
}


def test_the_writer_can_write(auth_s3: AuthS3):
    """The control: the same server and bucket work with the right credentials."""
    s3 = client(auth_s3.endpoint, **_pair(auth_s3.writer))
    s3.put_object(Bucket=auth_s3.bucket, Key="control", Body=b"ok")


@pytest.mark.parametrize("case", list(CASES))
def test_refused_requests_raise_without_the_credentials(
    auth_s3: AuthS3, monkeypatch: pytest.MonkeyPatch, case: str
):
    env, secrets = connection(auth_s3, case)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    store = open_object_store(f"s3://{auth_s3.bucket}/p")
    operations = {
        "upload": lambda: store.put_bytes("k", b"v"),
        "list": lambda: list(store.list()),
        "read": lambda: store.read_range("control"),
    }
    for name, operation in operations.items():
        with pytest.raises(RemoteStorageError) as caught:
            operation()
        message = str(caught.value)
        assert CASES[case] in message or name == "read", (name, message)
        assert leaks(secrets, message, "".join(traceback.format_exception(caught.value))) == []


def test_the_cli_reports_a_refused_bucket_without_the_credentials(auth_s3: AuthS3, tmp_path: Path):
    """One case is enough here: the CLI prints the same message the store raised above."""
    case = "wrong secret"
    env, secrets = connection(auth_s3, case)
    settings = Settings.embedded(tmp_path, remote_storage=f"s3://{auth_s3.bucket}/p")
    run = tierflow({**settings.as_env(), **env}, "reconcile")
    assert run.returncode == 2 and CASES[case] in run.output, run.output
    assert run.leaks(secrets) == []


# Credentials where they do not belong: in the bucket URL, and in an S3-compatible store's
# HTTP URL given instead of s3:// (an unsupported scheme, refused too).
USERINFO = f"{AWS_ACCESS_KEY_ID}:{quote(AWS_SECRET_ACCESS_KEY, safe='')}"
URLS_WITH_CREDENTIALS = {
    "s3": f"s3://{USERINFO}@tierflow-bucket/prefix",
    "https": f"https://{USERINFO}@minio.internal:9000/tierflow-bucket",
}


@pytest.mark.parametrize("scheme", list(URLS_WITH_CREDENTIALS))
def test_a_storage_url_with_credentials_is_refused_without_repeating_them(scheme: str):
    with pytest.raises(UnsupportedStorageURLError) as caught:
        open_object_store(URLS_WITH_CREDENTIALS[scheme])
    assert leaks(aws_secrets(), "".join(traceback.format_exception(caught.value))) == []


# reconcile reports the error itself; copy lets it reach the CLI's last resort.
@pytest.mark.parametrize(("scheme", "command"), [("s3", "reconcile"), ("https", "copy")])
def test_the_cli_never_prints_credentials_from_the_storage_url(
    tmp_path: Path, scheme: str, command: str
):
    settings = Settings.embedded(tmp_path, remote_storage=URLS_WITH_CREDENTIALS[scheme])
    run = tierflow(settings.as_env(), command)
    assert run.returncode == 2 and "remote storage" in run.output, run.output
    assert "Traceback" not in run.output
    assert run.leaks(aws_secrets()) == []


@pytest.mark.parametrize("scheme", list(URLS_WITH_CREDENTIALS))
def test_a_task_log_masks_credentials_from_the_storage_url(tmp_path: Path, scheme: str):
    """An Airflow task failing on such a URL: what its log shows after the secrets masker."""
    from airflow.sdk.log import redact

    from tierflow.tasks.index_cache import warm_index_cache

    settings = Settings.embedded(tmp_path, remote_storage=URLS_WITH_CREDENTIALS[scheme])
    with pytest.raises(UnsupportedStorageURLError) as caught:
        warm_index_cache(settings)
    logged = str(redact("".join(traceback.format_exception(caught.value))))
    assert "remote storage" in logged
    assert leaks(aws_secrets(), logged) == [], logged
