"""A production-shaped tierflow with distinctive secrets everywhere they are configured.

S3 on the session's moto_server through an ``aws_default`` connection holding the fake AWS
credentials of ``needles``; AES-GCM encryption with a key ring made by ``tierflow keys
generate``; the metadata store on PostgreSQL, reached as a role that must present its password,
which sits URL-quoted in TIERFLOW_DB_URL. Everything a run writes lands under one directory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from tests.security.needles import (
    AWS_ACCESS_KEY_ID,
    AWS_SECRET_ACCESS_KEY,
    AWS_SESSION_TOKEN,
    Secret,
    aws_secrets,
    pg_password_secret,
    private_key_secret,
)
from tests.security.pg_role import PasswordRole
from tests.support.moto_server import REGION, MotoServer
from tests.support.tiered import NOW_MS, TOPICS
from tierflow.config import Settings
from tierflow.demo.broker import generate_log_dir
from tierflow.demo.topics import TopicSpec
from tierflow.runtime import open_store, partition_logs

KEY_ID = "sec-1"
# orders and payments as the DAG tests have them, plus a topic for Kafka to delete.
WORLD_TOPICS = (*TOPICS, TopicSpec(name="audit", partitions=1, segments=2))


@dataclass
class World:
    base: Path
    settings: Settings
    role: PasswordRole
    connection_env: dict[str, str]
    keys_dir: Path
    moto: MotoServer
    bucket: str
    # What the commands run for this world printed, by label: part of the captured output.
    outputs: dict[str, str] = field(default_factory=dict)

    @property
    def env(self) -> dict[str, str]:
        """The environment an Airflow worker of this deployment gets."""
        return {**self.settings.as_env(), **self.connection_env}

    def secrets(self) -> list[Secret]:
        return [
            *aws_secrets(),
            pg_password_secret(self.role.password),
            private_key_secret(
                self.keys_dir / f"{KEY_ID}-private.pem", self.keys_dir / f"{KEY_ID}-public.pem"
            ),
        ]

    def bucket_objects(self) -> dict[str, bytes]:
        """Every object in the bucket, read behind tierflow's back."""
        client = self.moto.client()
        listed = client.list_objects_v2(Bucket=self.bucket).get("Contents") or []
        return {
            item["Key"]: client.get_object(Bucket=self.bucket, Key=item["Key"])["Body"].read()
            for item in listed
        }

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


def build_world(
    base: Path, moto: MotoServer, bucket: str, role: PasswordRole, **overrides: object
) -> World:
    """Key ring (through the CLI), broker log dir, registered topics; nothing copied yet."""
    keys_dir = base / "keys"
    settings = Settings.embedded(
        base,
        db_url=role.url(),
        remote_storage=f"s3://{bucket}/secure",
        storage_layout="chunked",
        chunk_size=16 * 1024,
        compression=True,
        keyring=keys_dir / "keyring.json",
        **overrides,
    )
    world = World(base, settings, role, aws_connection_env(moto.endpoint), keys_dir, moto, bucket)
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
