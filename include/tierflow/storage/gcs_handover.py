"""Handing an Airflow Google Cloud connection to Spark executors, which cannot import Airflow:
the same way as S3's (``s3_handover``), through ``storage.handover``.

The Airflow task resolves the connection through ``GCSHook`` right before spark-submit starts
and hands over an OAuth2 access token fetched now, never the key it was minted from (a service
account's private key stays with Airflow). The token lives about an hour, as S3's temporary
credentials do; an anonymous connection (``is_anonymous``, for public buckets and emulators)
hands over none. ``__repr__`` leaves the token out, and the task registers it with Airflow's
secrets masker.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from tierflow.storage.client_spec import JsonFields

NO_PROJECT = "<none>"  # object requests need no project; the client library's own placeholder


@dataclass(frozen=True)
class GcsClientSpec(JsonFields):
    """Everything a plain storage.Client needs."""

    project: str | None = None
    token: str | None = field(default=None, repr=False)
    expiry: str | None = None  # ISO 8601, UTC, as google-auth keeps it

    @classmethod
    def from_connection(cls, gcp_conn_id: str) -> GcsClientSpec:
        """Resolve an Airflow connection the way GCSHook does; only Airflow tasks call this."""
        from airflow.providers.google.cloud.hooks.gcs import GCSHook
        from airflow.sdk.log import mask_secret
        from google.auth.credentials import AnonymousCredentials
        from google.auth.transport.requests import Request

        hook = GCSHook(gcp_conn_id=gcp_conn_id)
        credentials = hook.get_credentials()
        if isinstance(credentials, AnonymousCredentials):
            return cls(hook.project_id)
        credentials.refresh(Request())
        mask_secret(credentials.token)
        expiry = credentials.expiry.isoformat() if credentials.expiry else None
        return cls(hook.project_id, credentials.token, expiry)

    def client(self) -> Any:
        """A storage.Client, without Airflow (tierflow's stores set timeouts per request)."""
        from google.cloud import storage

        return storage.Client(project=self.project or NO_PROJECT, credentials=self._credentials())

    def _credentials(self) -> Any:
        if not self.token:
            from google.auth.credentials import AnonymousCredentials

            return AnonymousCredentials()
        from google.oauth2.credentials import Credentials

        expiry = datetime.fromisoformat(self.expiry) if self.expiry else None
        return Credentials(self.token, expiry=expiry)
