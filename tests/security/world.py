"""A production-shaped tierflow with distinctive secrets everywhere they are configured.

The bucket on S3 (the session's moto_server, through an ``aws_default`` connection holding the
fake AWS credentials of ``needles``) or on Azure (Azurite, through a ``wasb_default``
connection string holding the account key) or on GCS (the emulator, through a
``google_cloud_default`` connection holding a service account key, whose access tokens the
run mints as it goes); AES-GCM encryption with a key ring made by
``tierflow keys generate``; the metadata store on PostgreSQL, reached as a role that must
present its password, which sits URL-quoted in TIERFLOW_DB_URL. Everything a run writes lands
under one directory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.security.needles import (
    AWS_ACCESS_KEY_ID,
    AWS_SECRET_ACCESS_KEY,
    AWS_SESSION_TOKEN,
    Secret,
    aws_secrets,
    azure_account_key_secret,
    gcp_access_token_secret,
    gcp_private_key_secret,
    pg_password_secret,
    private_key_secret,
)
from tests.security.pg_role import PasswordRole
from tests.support.azurite import ACCOUNT, ACCOUNT_KEY, Azurite
from tests.support.gcs_emulator import GcsEmulator, ServiceAccount
from tests.support.moto_server import REGION, MotoServer
from tests.support.tiered import NOW_MS, TOPICS
from tierflow.config import Settings
from tierflow.demo.broker import generate_log_dir
from tierflow.demo.topics import TopicSpec
from tierflow.runtime import open_store, partition_logs

KEY_ID = "sec-1"
# orders and payments as the DAG tests have them, plus a topic for Kafka to delete.
WORLD_TOPICS = (*TOPICS, TopicSpec(name="audit", partitions=1, segments=2))


@dataclass(frozen=True)
class CloudBucket:
    """A world's bucket: its URL, the Airflow connection reaching it and the secrets that
    connection holds, and its objects read behind tierflow's back."""

    url: str
    connection_env: dict[str, str]
    secrets: list[Secret]
    objects: Callable[[], dict[str, bytes]]
    # Secrets made from the configured ones during the run (an access token): configured
    # nowhere, so searched for everywhere.
    minted: list[Secret] = field(default_factory=list)


def s3_bucket(moto: MotoServer, bucket: str) -> CloudBucket:
    def objects() -> dict[str, bytes]:
        client = moto.client()
        listed = client.list_objects_v2(Bucket=bucket).get("Contents") or []
        read = client.get_object
        return {o["Key"]: read(Bucket=bucket, Key=o["Key"])["Body"].read() for o in listed}

    env = aws_connection_env(moto.endpoint)
    return CloudBucket(f"s3://{bucket}/secure", env, aws_secrets(), objects)


def azure_bucket(azurite: Azurite, container: str) -> CloudBucket:
    def objects() -> dict[str, bytes]:
        client = azurite.service().get_container_client(container)
        read = client.download_blob
        return {name: read(name).readall() for name in client.list_blob_names()}

    secrets = [azure_account_key_secret(ACCOUNT_KEY)]
    url = f"abfs://{container}@{ACCOUNT}/secure"
    return CloudBucket(url, azurite.connection_env(), secrets, objects)


def gcs_bucket(emulator: GcsEmulator, account: ServiceAccount, bucket: str) -> CloudBucket:
    def objects() -> dict[str, bytes]:
        blobs = emulator.client().list_blobs(bucket)
        return {blob.name: blob.download_as_bytes() for blob in blobs}

    env = emulator.connection_env(keyfile=account.keyfile)
    secrets = [gcp_private_key_secret(account.keyfile["private_key"])]
    minted = [gcp_access_token_secret(account.access_token)]
    return CloudBucket(f"gs://{bucket}/secure", env, secrets, objects, minted)


@dataclass
class World:
    base: Path
    settings: Settings
    role: PasswordRole
    bucket: CloudBucket
    keys_dir: Path
    # What the commands run for this world printed, by label: part of the captured output.
    outputs: dict[str, str] = field(default_factory=dict)

    @property
    def env(self) -> dict[str, str]:
        """The environment an Airflow worker of this deployment gets."""
        return {**self.settings.as_env(), **self.bucket.connection_env}

    def secrets(self) -> list[Secret]:
        return [
            *self.bucket.secrets,
            *self.bucket.minted,
            pg_password_secret(self.role.password),
            private_key_secret(
                self.keys_dir / f"{KEY_ID}-private.pem", self.keys_dir / f"{KEY_ID}-public.pem"
            ),
        ]

    def bucket_objects(self) -> dict[str, bytes]:
        """Every object in the bucket, read behind tierflow's back."""
        return self.bucket.objects()

    def cli(self, label: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        """``tierflow ARGS`` in a subprocess with this world's environment; output is kept."""
        done = subprocess.run(
            [sys.executable, "-m", "tierflow.cli", *args],
            env={**os.environ, **self.env},
            capture_output=True,
            text=True,
            check=False,
        )
        self.outputs[label] = done.stdout + done.stderr
        if check and done.returncode != 0:
            raise AssertionError(f"tierflow {' '.join(args)}: {done.returncode}\n{done.stderr}")
        return done


def aws_connection_env(endpoint: str, conn_id: str = "aws_default") -> dict[str, str]:
    """An Airflow connection in JSON form carrying the distinctive AWS credentials."""
    connection = {
        "conn_type": "aws",
        "login": AWS_ACCESS_KEY_ID,
        "password": AWS_SECRET_ACCESS_KEY,
        "extra": {
            "endpoint_url": endpoint,
            "region_name": REGION,
            "aws_session_token": AWS_SESSION_TOKEN,
        },
    }
    return {f"AIRFLOW_CONN_{conn_id.upper()}": json.dumps(connection)}


def build_world(base: Path, bucket: CloudBucket, role: PasswordRole, **overrides: object) -> World:
    """Key ring (through the CLI), broker log dir, registered topics; nothing copied yet."""
    keys_dir = base / "keys"
    settings = Settings.embedded(
        base,
        db_url=role.url(),
        remote_storage=bucket.url,
        storage_layout="chunked",
        chunk_size=16 * 1024,
        compression=True,
        keyring=keys_dir / "keyring.json",
        **overrides,
    )
    world = World(base, settings, role, bucket, keys_dir)
    world.cli(
        "tierflow keys generate", "keys", "generate", "--dir", str(keys_dir), "--key-id", KEY_ID
    )
    world.cli("tierflow keys list", "keys", "list")
    generate_log_dir(settings.log_dirs[0], topics=WORLD_TOPICS, seed=11, now_ms=NOW_MS)
    store = open_store(settings)
    for log_ in partition_logs(settings.log_dirs):
        store.register_topic(
            log_.topic, log_.topic_id(), actor="test", now_ms=NOW_MS, remote_storage_enable=True
        )
    store.close()
    return world
