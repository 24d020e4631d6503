"""Handing an Airflow Azure Blob Storage connection to Spark executors, which cannot import
Airflow: the same way as S3's (``s3_handover``), through ``storage.handover``.

The Airflow task resolves the connection through ``WasbHook`` right before spark-submit
starts: the account's blob endpoint and its credential, as one of an account key, a SAS token,
or, for a service principal or a managed identity, a bearer token fetched now (it outlives a
Spark job, as S3's temporary credentials do). ``__repr__`` leaves the secrets out, and the task
registers them with Airflow's secrets masker.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tierflow.config import default
from tierflow.storage.client_spec import JsonFields

STORAGE_SCOPE = "https://storage.azure.com/.default"


@dataclass(frozen=True)
class AzureClientSpec(JsonFields):
    """Everything a plain BlobServiceClient needs."""

    account_url: str
    account_name: str | None = None
    account_key: str | None = field(default=None, repr=False)
    sas_token: str | None = field(default=None, repr=False)
    bearer_token: str | None = field(default=None, repr=False)
    bearer_expires_on: int = 0

    @classmethod
    def from_connection(cls, wasb_conn_id: str) -> AzureClientSpec:
        """Resolve an Airflow connection the way WasbHook does; only Airflow tasks call this."""
        from airflow.providers.microsoft.azure.hooks.wasb import WasbHook
        from airflow.sdk.log import mask_secret

        service = WasbHook(wasb_conn_id=wasb_conn_id).get_conn()
        spec = cls(service.url.split("?")[0], service.account_name, **_credential(service))
        for secret in (spec.account_key, spec.sas_token, spec.bearer_token):
            if secret:
                mask_secret(secret)
        return spec

    def container(self, name: str, timeout_s: float = default("storage_timeout_s")) -> Any:
        """A ContainerClient, without Airflow; no SDK retries, tierflow's timeouts."""
        from azure.storage.blob import BlobServiceClient

        service = BlobServiceClient(
            account_url=self.account_url,
            credential=self._credential(),
            retry_total=0,
            connection_timeout=timeout_s,
            read_timeout=timeout_s,
        )
        return service.get_container_client(name)

    def _credential(self) -> Any:
        if self.account_key:
            return {"account_name": self.account_name, "account_key": self.account_key}
        if self.sas_token:
            from azure.core.credentials import AzureSasCredential

            return AzureSasCredential(self.sas_token)
        if self.bearer_token:
            return _StaticToken(self.bearer_token, self.bearer_expires_on)
        return None


def _credential(service: Any) -> dict[str, Any]:
    """The spec's credential fields from a BlobServiceClient's credential."""
    credential = service.credential
    if credential is None:
        query = service.url.partition("?")[2]
        return {"sas_token": query} if query else {}
    if hasattr(credential, "account_key"):
        return {"account_key": credential.account_key}
    if hasattr(credential, "signature"):
        return {"sas_token": credential.signature}
    if isinstance(credential, str):
        return {"sas_token": credential}
    token = credential.get_token(STORAGE_SCOPE)
    return {"bearer_token": token.token, "bearer_expires_on": token.expires_on}


class _StaticToken:
    """A bearer token fetched by the Airflow task, as a TokenCredential."""

    def __init__(self, token: str, expires_on: int) -> None:
        self._token, self._expires_on = token, expires_on

    def get_token(self, *scopes: str, **kwargs: Any) -> Any:
        from azure.core.credentials import AccessToken

        return AccessToken(self._token, self._expires_on)
