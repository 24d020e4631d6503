"""Handing an Airflow S3 connection to Spark executors, which cannot import Airflow.

The Airflow task resolves the connection through ``S3Hook`` right before spark-submit starts:
endpoint, region, the connection's botocore ``config_kwargs`` (addressing style, checksums...),
TLS verification and the credentials (temporary ones when the connection assumes a role).
They travel in ONE environment variable of the spark-submit process, ``TIERFLOW_BUCKET_CLIENT``
(``storage.handover``, which hands an Azure connection over the same way).
The driver takes it out of its environment and ships it to the executors inside the task
closure, where each builds a plain boto3 client.

What the credentials never touch: the spark-submit arguments and ``--conf`` (readable by every
user in ``ps``, logged by the Spark hook, kept in Spark's event log and UI), operator fields
(rendered into Airflow's database), XComs, files at rest, and log lines (``__repr__`` leaves
them out, and the task registers them with Airflow's secrets masker too).

This works wherever the driver is the spark-submit process: ``local[*]`` and a standalone
cluster (PySpark runs its driver in client mode there), on this machine or another.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tierflow.config import default
from tierflow.storage.client_spec import JsonFields


@dataclass(frozen=True)
class S3ClientSpec(JsonFields):
    """Everything a plain boto3 S3 client needs. Fields left None fall back to boto3's own
    resolution (AWS_* variables, instance profile), as for a job started outside Airflow."""

    endpoint_url: str | None = None
    region_name: str | None = None
    # The connection extra's ``config_kwargs``, for botocore.config.Config (JSON, not hashed).
    config_kwargs: dict[str, Any] | None = field(default=None, hash=False)
    verify: bool | str | None = None
    access_key_id: str | None = field(default=None, repr=False)
    secret_access_key: str | None = field(default=None, repr=False)
    session_token: str | None = field(default=None, repr=False)

    @classmethod
    def from_connection(cls, aws_conn_id: str) -> S3ClientSpec:
        """Resolve an Airflow connection the way S3Hook does; only Airflow tasks call this."""
        from airflow.providers.amazon.aws.hooks.s3 import S3Hook
        from airflow.sdk.log import mask_secret

        hook = S3Hook(aws_conn_id=aws_conn_id)
        meta = hook.get_conn().meta
        found = hook.get_session(region_name=hook.region_name).get_credentials()
        frozen = found.get_frozen_credentials() if found is not None else None
        for secret in (frozen.secret_key, frozen.token) if frozen else ():
            if secret:
                mask_secret(secret)
        return cls(
            endpoint_url=hook.conn_config.get_service_endpoint_url("s3"),
            region_name=meta.region_name,
            config_kwargs=hook.conn_config.extra_config.get("config_kwargs") or None,
            verify=hook.verify,
            access_key_id=frozen.access_key if frozen else None,
            secret_access_key=frozen.secret_key if frozen else None,
            session_token=frozen.token if frozen else None,
        )

    def client(self, timeout_s: float = default("storage_timeout_s")) -> Any:
        """A boto3 S3 client, without Airflow; timeouts and retries as ``s3.request_config``."""
        import boto3
        from botocore import UNSIGNED
        from botocore.config import Config

        from tierflow.storage.s3 import request_config

        session = boto3.session.Session(
            aws_access_key_id=self.access_key_id,
            aws_secret_access_key=self.secret_access_key,
            aws_session_token=self.session_token,
            region_name=self.region_name,
        )
        options = dict(self.config_kwargs or {})
        if options.get("signature_version") == "unsigned":  # as the Amazon provider reads it
            options["signature_version"] = UNSIGNED
        config = Config(**options).merge(request_config(timeout_s))
        return session.client(
            "s3", endpoint_url=self.endpoint_url, verify=self.verify, config=config
        )
