"""A bucket's Airflow connection, resolved by the task and handed to processes that cannot
import Airflow: Spark executors (through the spark-submit process's environment, see
``s3_handover`` for what that keeps the credentials out of) and the worker's rewrite pool
(as an argument).

One spec per cloud: ``S3ClientSpec`` for ``s3://``, ``AzureClientSpec`` for ``abfs://`` and
``wasb://``, ``GcsClientSpec`` for ``gs://``; a local bucket needs none. Each travels as ONE
environment variable, ``TIERFLOW_BUCKET_CLIENT``, for as long as spark-submit runs; the driver
takes it out of its environment and ships it to the executors inside the task closure.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager
from urllib.parse import urlparse

from tierflow.config import Settings
from tierflow.storage.azure_handover import AzureClientSpec
from tierflow.storage.gcs_handover import GcsClientSpec
from tierflow.storage.s3_handover import S3ClientSpec
from tierflow.storage.urls import AZURE_SCHEMES

HANDOVER_ENV = "TIERFLOW_BUCKET_CLIENT"
BucketClient = S3ClientSpec | AzureClientSpec | GcsClientSpec
KINDS: dict[str, type[BucketClient]] = {
    "s3": S3ClientSpec,
    "azure": AzureClientSpec,
    "gcs": GcsClientSpec,
}


def connection_client(settings: Settings) -> BucketClient | None:
    """The bucket's connection, resolved here (Airflow tasks and the CLI); None for a local
    bucket."""
    scheme = urlparse(settings.remote_storage).scheme
    if scheme == "s3":
        return S3ClientSpec.from_connection(settings.storage.aws_conn_id)
    if scheme in AZURE_SCHEMES:
        return AzureClientSpec.from_connection(settings.storage.azure_conn_id)
    if scheme == "gs":
        return GcsClientSpec.from_connection(settings.storage.gcp_conn_id)
    return None


def to_json(spec: BucketClient) -> str:
    kind = next(name for name, cls in KINDS.items() if isinstance(spec, cls))
    return json.dumps({"kind": kind, "spec": json.loads(spec.to_json())})


def from_json(text: str) -> BucketClient:
    raw = json.loads(text)
    return KINDS[raw["kind"]].from_json(json.dumps(raw["spec"]))


@contextmanager
def handed_over(
    spec: BucketClient | None, environ: MutableMapping[str, str] | None = None
) -> Iterator[None]:
    """``spec`` in the environment that spark-submit inherits, for as long as it runs: the
    environment of this task's own process, not an operator field, so nothing to render,
    store or log, and gone when the block ends. None hands nothing over."""
    environ = os.environ if environ is None else environ
    previous = environ.get(HANDOVER_ENV)
    if spec is not None:
        environ[HANDOVER_ENV] = to_json(spec)
    try:
        yield
    finally:
        if previous is None:
            environ.pop(HANDOVER_ENV, None)
        else:
            environ[HANDOVER_ENV] = previous


def take_handed_over(
    settings: Settings, environ: MutableMapping[str, str] | None = None
) -> BucketClient | None:
    """The driver's side: the spec the task handed over (removed from the environment, so the
    driver's children do not inherit it). Started by hand, an s3:// bucket falls back to
    boto3's own credential chain; other buckets need none or fail in their executors."""
    environ = os.environ if environ is None else environ
    raw = environ.pop(HANDOVER_ENV, None)
    if raw:
        return from_json(raw)
    return S3ClientSpec() if urlparse(settings.remote_storage).scheme == "s3" else None
