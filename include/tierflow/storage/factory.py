"""Build the configured storage manager from settings.

A plain path or ``file://`` URL is a local directory bucket (the embedded default);
``s3://bucket[/prefix]`` is an S3 bucket, or any S3-compatible store, reached through the
Airflow connection ``aws_conn_id`` (Spark executors pass a handed-over client spec instead);
``abfs://container@account[/prefix]`` (or ``wasb://``) an Azure Blob Storage container,
through the Airflow connection ``azure_conn_id``; ``gs://bucket[/prefix]`` a Google Cloud
Storage bucket, through the Airflow connection ``gcp_conn_id``.
The layout is Aiven's chunked one (optionally compressed and encrypted), plain (one object per
file, under Aiven's keys) or kafka-local (one object per file, under Kafka's LocalTieredStorage's
keys: a local bucket is then a broker's ``rsm.config.dir``). S3 requests are retried by the
configured policy; a local directory fails for good when it fails.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, Unpack
from urllib.parse import urlparse

from tierflow.config import InvalidSettingError, default, variable
from tierflow.rsm import RemoteStorageManager
from tierflow.storage.cloud_store import ConnectionOptions
from tierflow.storage.keys import key_layout
from tierflow.storage.local import LocalDirectoryObjectStore
from tierflow.storage.object_store import ObjectStore
from tierflow.storage.plain import PlainRemoteStorageManager
from tierflow.storage.retry import RetryPolicy
from tierflow.storage.urls import AZURE_SCHEMES, LOCAL_SCHEMES, shown_url

if TYPE_CHECKING:
    from tierflow.config import Settings
    from tierflow.storage.chunked import ChunkCache
    from tierflow.storage.handover import BucketClient


ONE_OBJECT_PER_FILE = ("plain", "kafka-local")  # the layouts of PlainRemoteStorageManager


class UnsupportedStorageURLError(ValueError):
    pass


class StoreOptions(ConnectionOptions, total=False):
    """What a cloud bucket's store takes besides its client (see S3ObjectStore,
    AzureBlobObjectStore and GcsObjectStore): how it talks to its service, and the Airflow
    connection of each backend; a local directory needs none of it."""

    aws_conn_id: str
    azure_conn_id: str
    gcp_conn_id: str


def open_object_store(
    url: str, *, bucket_client: BucketClient | None = None, **options: Unpack[StoreOptions]
) -> ObjectStore:
    """The bucket at ``url``; ``bucket_client`` replaces the Airflow connection (Spark
    executors, the worker's rewrite pool)."""
    scheme = urlparse(url).scheme
    for backend in BACKENDS:
        if scheme in backend.schemes:
            return backend.open(url, bucket_client, options)
    supported = ", ".join(f"{s}://" if s else "a path" for b in BACKENDS for s in b.schemes)
    raise UnsupportedStorageURLError(
        f"remote storage {shown_url(url)!r}: unsupported scheme {scheme!r} (supported: {supported})"
    )


def _s3_bucket(url: str, spec: BucketClient | None, options: StoreOptions) -> ObjectStore:
    from tierflow.storage.s3 import S3ObjectStore, parse_s3_url

    try:
        bucket, prefix = parse_s3_url(url)
    except ValueError as exc:
        raise UnsupportedStorageURLError(f"remote storage {exc}") from None
    timeout_s = options.get("timeout_s", default("storage_timeout_s"))
    client = None if spec is None else spec.client(timeout_s)
    s3_options = {k: v for k, v in options.items() if k not in ("azure_conn_id", "gcp_conn_id")}
    return S3ObjectStore(bucket, prefix=prefix, client=client, **s3_options)


def _azure_container(url: str, spec: BucketClient | None, options: StoreOptions) -> ObjectStore:
    from tierflow.storage.azure_blob import AzureBlobObjectStore, parse_azure_url

    try:
        container, account, prefix = parse_azure_url(url)
    except ValueError as exc:
        raise UnsupportedStorageURLError(f"remote storage {exc}") from None
    timeout_s = options.get("timeout_s", default("storage_timeout_s"))
    return AzureBlobObjectStore(
        container,
        account=account,
        prefix=prefix,
        wasb_conn_id=options.get("azure_conn_id", default("azure_conn_id")),
        client=None if spec is None else spec.container(container, timeout_s),
        retry=options.get("retry"),
        timeout_s=timeout_s,
    )


def _gcs_bucket(url: str, spec: BucketClient | None, options: StoreOptions) -> ObjectStore:
    from tierflow.storage.gcs import GcsObjectStore, parse_gcs_url

    try:
        bucket, prefix = parse_gcs_url(url)
    except ValueError as exc:
        raise UnsupportedStorageURLError(f"remote storage {exc}") from None
    return GcsObjectStore(
        bucket,
        prefix=prefix,
        gcp_conn_id=options.get("gcp_conn_id", default("gcp_conn_id")),
        part_size=options.get("part_size", default("s3_part_size")),
        client=None if spec is None else spec.client(),
        retry=options.get("retry"),
        timeout_s=options.get("timeout_s", default("storage_timeout_s")),
    )


def _local_bucket(root: Path) -> LocalDirectoryObjectStore:
    """A directory bucket, made if missing; a regular file where it or a parent should be is
    the operator's setting to fix, named as such rather than as an errno."""
    try:
        return LocalDirectoryObjectStore(root)
    except (FileExistsError, NotADirectoryError):
        blocking = next((p for p in (root, *root.parents) if p.exists() and not p.is_dir()), root)
        raise InvalidSettingError(
            f"{variable('remote_storage')} {root}: {blocking} is not a directory "
            "(a local bucket is a directory, made if missing)"
        ) from None


def _local_url(url: str, _spec: BucketClient | None, _options: StoreOptions) -> ObjectStore:
    parsed = urlparse(url)
    return _local_bucket(Path(parsed.path if parsed.scheme else url))


class Backend(NamedTuple):
    """An object store the factory opens: the name the docs give it, its URL schemes."""

    name: str
    schemes: tuple[str, ...]
    open: Callable[[str, BucketClient | None, StoreOptions], ObjectStore]


BACKENDS = (
    Backend("a local directory", LOCAL_SCHEMES, _local_url),
    Backend("S3", ("s3",), _s3_bucket),
    Backend("GCS", ("gs",), _gcs_bucket),
    Backend("Azure Blob Storage", AZURE_SCHEMES, _azure_container),
)


def is_s3_url(url: str) -> bool:
    return urlparse(url).scheme == "s3"


def settings_object_store(
    settings: Settings, *, bucket_client: BucketClient | None = None
) -> ObjectStore:
    """The configured bucket; ``bucket_client`` replaces the Airflow connection (executors)."""
    return open_object_store(
        settings.remote_storage,
        aws_conn_id=settings.storage.aws_conn_id,
        azure_conn_id=settings.storage.azure_conn_id,
        gcp_conn_id=settings.storage.gcp_conn_id,
        part_size=settings.storage.s3_part_size,
        bucket_client=bucket_client,
        retry=retry_policy(settings),
        timeout_s=settings.storage.timeout_s,
    )


def retry_policy(settings: Settings) -> RetryPolicy:
    return RetryPolicy(
        attempts=settings.storage.retry_attempts,
        base_delay_s=settings.storage.retry_base_ms / 1000,
        max_delay_s=settings.storage.retry_max_ms / 1000,
    )


def open_remote_storage(
    settings: Settings,
    *,
    bucket_client: BucketClient | None = None,
    cache: ChunkCache | None = None,
) -> RemoteStorageManager:
    """The configured storage manager. ``cache`` is for readers (the read path builds one from
    the settings, ``tierflow.runtime.open_storage`` passes it); uploads need none."""
    objects = settings_object_store(settings, bucket_client=bucket_client)
    if settings.storage.layout in ONE_OBJECT_PER_FILE:
        keys = key_layout(settings.storage.layout)
        return PlainRemoteStorageManager(objects, settings.storage.prefix, keys=keys)
    from tierflow.storage.chunked import ChunkedRemoteStorageManager
    from tierflow.transform.keyring import KeyRing

    return ChunkedRemoteStorageManager(
        objects,
        settings.storage.prefix,
        chunk_size=settings.storage.chunk_size,
        compression=settings.storage.compression,
        compression_heuristic=settings.storage.compression_heuristic,
        key_ring=KeyRing.load(settings.storage.keyring) if settings.storage.keyring else None,
        cache=cache,
    )
