"""Aiven's storage backend settings for a cloud bucket: S3, GCS or Azure Blob Storage.

tierflow reaches the bucket through an Airflow connection, whose credentials, region and
endpoint stay there; the brokers need their own. What the URL says (bucket, container, account,
prefix) is printed; what only the operator knows is an option (``--s3-region``,
``--endpoint-url``) or a note naming the plugin's setting to fill in. Credentials never are.
"""

from __future__ import annotations

from urllib.parse import urlparse

from tierflow.cluster.broker_options import BrokerConfigError, BrokerOptions
from tierflow.config import Settings, variable
from tierflow.storage.azure_blob import AZURE_SCHEMES, parse_azure_url
from tierflow.storage.gcs import parse_gcs_url
from tierflow.storage.s3 import parse_s3_url
from tierflow.storage.urls import shown_url

STORAGE = "io.aiven.kafka.tieredstorage.storage"
S3_STORAGE = f"{STORAGE}.s3.S3Storage"
GCS_STORAGE = f"{STORAGE}.gcs.GcsStorage"
AZURE_STORAGE = f"{STORAGE}.azure.AzureBlobStorage"
FILESYSTEM_STORAGE = f"{STORAGE}.filesystem.FileSystemStorage"  # Aiven: for development

Properties = tuple[tuple[str, str], ...]
Backend = tuple[str, str, Properties, tuple[str, ...]]  # title, URL prefix, properties, notes


def backend_settings(settings: Settings, options: BrokerOptions) -> Backend:
    """(title, the URL's key prefix, properties, notes) of a cloud bucket's backend."""
    url = settings.remote_storage
    scheme = urlparse(url).scheme
    if options.s3_region is not None and scheme != "s3":
        raise BrokerConfigError(f"--s3-region: only for an s3:// bucket, not {shown_url(url)}")
    try:
        if scheme == "s3":
            return _s3(url, settings.storage.aws_conn_id, options)
        if scheme == "gs":
            return _gcs(url, settings.storage.gcp_conn_id, options)
        if scheme in AZURE_SCHEMES:
            return _azure(url, settings.storage.azure_conn_id, options)
    except ValueError as exc:  # the URL's own parser names what is wrong with it
        raise BrokerConfigError(f"{variable('remote_storage')}: {exc}") from None
    raise BrokerConfigError(
        f"{variable('remote_storage')}={shown_url(url)}: no Aiven storage backend for "
        f"scheme {scheme!r} (a directory, s3://, gs://, abfs:// or wasb://)"
    )


def _endpoint(key: str, options: BrokerOptions) -> Properties:
    return ((key, options.endpoint_url),) if options.endpoint_url else ()


def _connection_note(conn_id: str) -> str:
    return f"tierflow reaches the bucket through the Airflow connection {conn_id!r}; the brokers"


def _s3(url: str, conn_id: str, options: BrokerOptions) -> Backend:
    bucket, prefix = parse_s3_url(url)
    region = (("rsm.config.storage.s3.region", options.s3_region),) if options.s3_region else ()
    properties = (
        ("rsm.config.storage.backend.class", S3_STORAGE),
        ("rsm.config.storage.s3.bucket.name", bucket),
        *region,
        *_endpoint("rsm.config.storage.s3.endpoint.url", options),
    )
    notes = [
        _connection_note(conn_id),
        "need credentials of their own: fill in rsm.config.storage.aws.access.key.id and",
        "rsm.config.storage.aws.secret.access.key, or rsm.config.storage.aws.credentials."
        "provider.class,",
        "or leave them out for the AWS SDK's default chain (environment, instance profile).",
    ]
    if not region:
        notes.append("rsm.config.storage.s3.region=<the bucket's region> is required: --s3-region")
    if options.endpoint_url:
        notes.append("An S3-compatible store may need rsm.config.storage.s3.path.style.access."
                     "enabled=true.")  # fmt: skip
    return "storage backend: S3 (Aiven's S3Storage)", prefix, properties, tuple(notes)


def _gcs(url: str, conn_id: str, options: BrokerOptions) -> Backend:
    bucket, prefix = parse_gcs_url(url)
    properties = (
        ("rsm.config.storage.backend.class", GCS_STORAGE),
        ("rsm.config.storage.gcs.bucket.name", bucket),
        *_endpoint("rsm.config.storage.gcs.endpoint.url", options),
    )
    notes = (
        _connection_note(conn_id),
        "need credentials of their own: exactly one of rsm.config.storage.gcs.credentials."
        "default=true,",
        "rsm.config.storage.gcs.credentials.path=<a key file> or rsm.config.storage.gcs."
        "credentials.json=<its JSON>.",
    )
    return "storage backend: Google Cloud Storage (Aiven's GcsStorage)", prefix, properties, notes


def _azure(url: str, conn_id: str, options: BrokerOptions) -> Backend:
    container, account, prefix = parse_azure_url(url)
    properties = (
        ("rsm.config.storage.backend.class", AZURE_STORAGE),
        ("rsm.config.storage.azure.container.name", container),
        ("rsm.config.storage.azure.account.name", account),
        *_endpoint("rsm.config.storage.azure.endpoint.url", options),
    )
    notes = (
        _connection_note(conn_id),
        "need credentials of their own: rsm.config.storage.azure.account.key or",
        "rsm.config.storage.azure.sas.token; or rsm.config.storage.azure.connection.string",
        "instead of account.name (and endpoint.url).",
    )
    title = "storage backend: Azure Blob Storage (Aiven's AzureBlobStorage)"
    return title, prefix, properties, notes
