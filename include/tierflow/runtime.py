"""Open the configured store, storage and log directories: one place for every entry point.

Settings may carry secrets inside URLs: the store's password in TIERFLOW_DB_URL, and
credentials someone put into TIERFLOW_REMOTE_STORAGE by mistake. Inside Airflow, opening
either registers those secrets with Airflow's secrets masker, so a message that quotes one
shows ``***`` in the task log; ``redact`` does the same for what the CLI prints.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import TypeVar
from urllib.parse import unquote, urlsplit

from tierflow.config import Settings
from tierflow.kafka.log_dir import LogDir, PartitionLog
from tierflow.metadata.engine import HIDDEN, password_forms
from tierflow.metadata.store import MetadataStore
from tierflow.read.chunk_cache import chunk_cache_for
from tierflow.rsm import RemoteStorageManager
from tierflow.storage.factory import open_remote_storage, settings_object_store
from tierflow.storage.object_store import ObjectStore

MIN_SECRET_LENGTH = 5
# The password of any URL in a text (scheme://user:***@host), whatever it is.
_URL_USERINFO = re.compile(r"(\b[a-zA-Z][\w+.-]*://[^\s/:@]*:)[^\s@]*@")


_T = TypeVar("_T")
# The open_* instances shared inside a shared_resources() block, by kind and settings.
_SHARED: ContextVar[dict | None] = ContextVar("tierflow_shared_resources", default=None)


class UnknownPartitionError(LookupError):
    pass


def open_store(settings: Settings, *, migrate: bool = True) -> MetadataStore:
    """The metadata store; readers elsewhere (a Spark driver) pass migrate=False."""

    def make() -> MetadataStore:
        mask_in_airflow(settings)
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        return MetadataStore(settings.db_url, migrate=migrate)

    return shared(("store", migrate), settings, make)


def open_storage(settings: Settings) -> RemoteStorageManager:
    def make() -> RemoteStorageManager:
        mask_in_airflow(settings)
        return open_remote_storage(settings, cache=chunk_cache_for(settings))

    return shared(("storage",), settings, make)


def open_objects(settings: Settings) -> ObjectStore:
    """The bucket itself, for work that lists keys rather than reading segments."""

    def make() -> ObjectStore:
        mask_in_airflow(settings)
        return settings_object_store(settings)

    return shared(("objects",), settings, make)


@contextmanager
def shared_resources() -> Iterator[None]:
    """Inside, each open_* hands out one instance per settings: a shard task opens its store
    (engine, schema check), storage (key ring) and bucket once for all its partitions rather
    than once per partition. Outside, every call opens afresh, as before."""
    token = _SHARED.set({})
    try:
        yield
    finally:
        _SHARED.reset(token)


def shared(kind: tuple, settings: Settings, make: Callable[[], _T]) -> _T:
    """``make()``'s result, made once per kind and settings inside shared_resources()."""
    cache = _SHARED.get()
    if cache is None:
        return make()
    key = (kind, settings)
    if key not in cache:
        cache[key] = make()
    return cache[key]


def configured_secrets(settings: Settings) -> list[str]:
    """Secrets inside the settings' URLs, raw and URL-quoted, longest first.

    All of a storage URL's userinfo counts: credentials have no place there at all. Values
    shorter than Airflow's minimum (5) are left out, as its masker does: hiding them would
    garble every message.
    """
    found = set(_safe_password_forms(settings.db_url))
    userinfo = urlsplit(settings.remote_storage).netloc.rpartition("@")[0]
    for part in filter(None, [userinfo, *userinfo.split(":", 1)]):
        found |= {part, unquote(part)}
    return sorted((s for s in found if len(s) >= MIN_SECRET_LENGTH), key=len, reverse=True)


def redact(text: str, settings: Settings | None = None) -> str:
    """``text`` with the configured secrets and any URL's password replaced by ***."""
    for secret in configured_secrets(settings) if settings else []:
        text = text.replace(secret, HIDDEN)
    return _URL_USERINFO.sub(rf"\g<1>{HIDDEN}@", text)


def mask_in_airflow(settings: Settings) -> None:
    """Register the settings' secrets with Airflow's secrets masker, when inside Airflow.

    The CLI and the Spark driver never import Airflow, and need not start now.
    """
    if "airflow.sdk" not in sys.modules:
        return
    from airflow.sdk.log import mask_secret

    for secret in configured_secrets(settings):
        mask_secret(secret)


def _safe_password_forms(url: str) -> list[str]:
    try:
        return password_forms(url)
    except Exception:  # an unreadable URL fails later, with an error that does not echo it
        return []


def partition_logs(log_dirs: Sequence[Path]) -> list[PartitionLog]:
    """Every partition in the broker's log directories (JBOD: several), sorted."""
    found: dict[tuple[str, int], PartitionLog] = {}
    for path in log_dirs:
        for log_ in LogDir(path).partitions():
            key = (log_.topic, log_.partition)
            if key in found:
                raise ValueError(
                    f"partition {log_.topic}-{log_.partition} is in two log dirs: "
                    f"{found[key].path} and {log_.path}"
                )
            found[key] = log_
    return [found[k] for k in sorted(found)]
