"""The cloud object stores behind the fault proxy, for the fault contract
(tests/storage/test_fault_contract.py): how each is opened through the proxy, and what its
requests look like on the wire, so that one test aims the same fault at each.

A rule's match is given as ``Rule`` keyword arguments. The stores upload in parts: S3 as a
multipart upload (parts numbered in the query, completed by a POST), Azure as staged blocks
(committed by a block list), GCS as a resumable session (its last chunk finishes it).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from tests.support.azurite import ACCOUNT, ACCOUNT_KEY
from tests.support.fault_proxy import Rule
from tests.support.gcs_emulator import EMULATOR_ENV
from tests.support.moto_server import ACCESS_KEY_ID, REGION, SECRET_ACCESS_KEY
from tierflow.config import MIN_S3_PART_SIZE
from tierflow.storage.azure_blob import AzureBlobObjectStore
from tierflow.storage.azure_handover import AzureClientSpec
from tierflow.storage.gcs import GcsObjectStore
from tierflow.storage.gcs_handover import GcsClientSpec
from tierflow.storage.object_store import ObjectStore
from tierflow.storage.retry import RetryPolicy
from tierflow.storage.s3 import S3ObjectStore
from tierflow.storage.s3_handover import S3ClientSpec

TIMEOUT_S = 1  # the clients' read timeout: a stall longer than this is a timeout
ATTEMPTS = 4
Match = dict[str, Any]  # Rule's keyword arguments, the fault aside


class Sleeps(list[float]):
    """Records the backoff instead of sleeping it (the delays are checked, not waited for)."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def payload(size: int, seed: int = 7) -> bytes:
    block = hashlib.sha256(str(seed).encode()).digest()
    return (block * (size // len(block) + 1))[:size]


@dataclass(frozen=True)
class FaultyBackend:
    name: str
    upstream: Callable[[pytest.FixtureRequest], str]  # the server's address, for the proxy
    open: Callable[[pytest.FixtureRequest, str, RetryPolicy], ObjectStore]  # through the proxy
    part_size: int
    part_word: str  # how a failed part is named: "upload of part 2 failed"
    part: Match  # a request carrying one part of an upload
    numbered_parts: bool  # the part's number is in the query (else: skip the parts before)
    finish: Match  # the request that makes the parts an object
    put: str  # the method of a one-request upload
    throttled: tuple[Match, ...]  # transient answers to a one-request upload, retried
    denied: Match  # a permanent refusal of an upload
    denied_as: str  # how the store names it
    read: Match  # a download of the object's bytes
    list_page: Match
    delete: Match
    gone_after_finish: tuple[Match, ...] = ()  # answers to a finish sent again after it took
    budget_reason: str = ""  # what ends the message of a spent budget
    incomplete: Callable[[Any], list[str]] | None = None  # uploads begun and never finished

    def part_rule(self, fault: str, number: int, **kwargs: Any) -> Rule:
        """A rule for the part ``number`` (from 1) of the next upload."""
        if self.numbered_parts:
            return Rule(fault, query_value=str(number), **self.part, **kwargs)
        return Rule(fault, skip=number - 1, **self.part, **kwargs)

    def unfinished(self, store: ObjectStore) -> list[str]:
        """Uploads begun and never finished, where the backend lists them (S3)."""
        return self.incomplete(store) if self.incomplete is not None else []

    def __str__(self) -> str:
        return self.name


def _open_s3(request: pytest.FixtureRequest, endpoint: str, retry: RetryPolicy) -> ObjectStore:
    spec = S3ClientSpec(
        endpoint_url=endpoint,
        region_name=REGION,
        access_key_id=ACCESS_KEY_ID,
        secret_access_key=SECRET_ACCESS_KEY,
    )
    store = S3ObjectStore(
        request.getfixturevalue("s3_bucket"),
        prefix="faults",
        part_size=MIN_S3_PART_SIZE,
        client=spec.client(timeout_s=TIMEOUT_S),
        retry=retry,
    )
    store.list_page_size = 3  # seven keys list in three pages
    return store


def _open_azure(request: pytest.FixtureRequest, endpoint: str, retry: RetryPolicy) -> ObjectStore:
    container = request.getfixturevalue("azure_container")
    spec = AzureClientSpec(f"{endpoint}/{ACCOUNT}", ACCOUNT, account_key=ACCOUNT_KEY)
    client = spec.container(container, timeout_s=TIMEOUT_S)
    return AzureBlobObjectStore(
        container, prefix="faults", part_size=AZURE.part_size, client=client, retry=retry
    )


def _open_gcs(request: pytest.FixtureRequest, endpoint: str, retry: RetryPolicy) -> ObjectStore:
    bucket = request.getfixturevalue("gcs_bucket")
    request.getfixturevalue("monkeypatch").setenv(EMULATOR_ENV, endpoint)
    client = GcsClientSpec("tierflow-test").client()
    return GcsObjectStore(
        bucket,
        prefix="faults",
        part_size=GCS.part_size,
        client=client,
        retry=retry,
        timeout_s=TIMEOUT_S,
    )


S3_FINISH: Match = {"method": "POST", "query": "uploadId"}
S3 = FaultyBackend(
    "s3",
    upstream=lambda request: request.getfixturevalue("moto_server").endpoint,
    open=_open_s3,
    part_size=MIN_S3_PART_SIZE,
    part_word="part",
    part={"method": "PUT", "query": "partNumber"},
    numbered_parts=True,
    finish=S3_FINISH,
    put="PUT",
    throttled=({"method": "PUT", "status": 503, "code": "SlowDown", "times": 2},),
    denied={"method": "PUT", "status": 403, "code": "AccessDenied"},
    denied_as="AccessDenied",
    read={"method": "GET"},
    # The second of three pages (seven keys, three a page: see _open_s3).
    list_page={
        "method": "GET",
        "query": "continuation-token",
        "status": 500,
        "code": "InternalError",
    },
    delete={"method": "POST", "query": "delete", "status": 503},
    # S3 answers so once it has assembled the object.
    gone_after_finish=({"status": 404, "code": "NoSuchUpload", **S3_FINISH},),
    budget_reason=": SlowDown",
    incomplete=lambda store: store.incomplete_uploads(),
)
AZURE_BLOCK: Match = {"method": "PUT", "query": "comp", "query_value": "block"}
AZURE = FaultyBackend(
    "azure",
    upstream=lambda request: request.getfixturevalue("azurite").endpoint.rsplit("/", 1)[0],
    open=_open_azure,
    part_size=64 * 1024,
    part_word="block",
    part=AZURE_BLOCK,
    numbered_parts=False,
    finish={"method": "PUT", "query": "comp", "query_value": "blocklist"},
    put="PUT",
    throttled=(
        {"method": "PUT", "status": 503, "code": "ServerBusy"},
        {"method": "PUT", "status": 429, "code": "TooManyRequests"},
    ),
    denied={"method": "PUT", "status": 403, "code": "AuthorizationFailure"},
    denied_as="AuthorizationFailure",
    read={"method": "GET"},
    list_page={"method": "GET", "query": "comp", "query_value": "list", "status": 500},
    delete={"method": "DELETE", "status": 503},
)
GCS_CHUNK: Match = {"method": "PUT", "query": "upload_id"}  # a resumable session's chunk
GCS = FaultyBackend(
    "gcs",
    upstream=lambda request: request.getfixturevalue("gcs_emulator").endpoint,
    open=_open_gcs,
    part_size=256 * 1024,
    part_word="chunk",
    part=GCS_CHUNK,
    numbered_parts=False,
    finish={"skip": 1, **GCS_CHUNK},  # the last of two chunks
    put="POST",
    throttled=({"method": "POST", "status": 503}, {"method": "POST", "status": 429}),
    denied={"method": "POST", "status": 403},
    denied_as="403",
    read={"method": "GET", "query": "alt"},  # alt=media: not the metadata's GET
    list_page={"method": "GET", "query": "prefix", "status": 500},
    delete={"method": "DELETE", "status": 503},
)
BACKENDS = [S3, GCS, AZURE]
