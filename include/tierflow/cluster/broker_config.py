"""The broker settings that make Kafka brokers (3.9, 4.x) tier to, and read, tierflow's bucket.

A topic can then pass from tierflow to the brokers, or the brokers' segments be followed: both
sides write the same objects under the same keys. Which storage manager reads the bucket
depends on the layout tierflow writes (TIERFLOW_STORAGE_LAYOUT):

- ``chunked``: Aiven's ``RemoteStorageManager`` (tiered-storage-for-apache-kafka), with its
  settings under Kafka's ``rsm.config.`` prefix: the storage backend of the bucket's scheme,
  ``key.prefix`` (tierflow's URL prefix and TIERFLOW_STORAGE_PREFIX), chunk size, compression,
  and the key ring's pairs as PEM files (Aiven reads keys from files only);
- ``kafka-local``: Kafka's own ``LocalTieredStorage`` (the kafka-storage test jar), whose
  ``dir`` is the directory bucket itself: for tests and demos;
- ``plain``: no broker plugin reads it, so there is nothing to print.

Credentials are never part of the result: a cloud bucket gets a note naming the plugin's
credential settings the operator fills in. Names follow Aiven's docs/configs.rst and its
``RemoteStorageManagerConfig``; note that the key prefix is ``rsm.config.key.prefix`` (the
README's ``rsm.config.storage.key.prefix`` is a known mistake, Aiven PR #797).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

from tierflow.cluster.broker_backends import FILESYSTEM_STORAGE, backend_settings
from tierflow.cluster.broker_keys import BrokerKeyPair, write_broker_keys
from tierflow.cluster.broker_options import BrokerConfigError, BrokerOptions
from tierflow.config import Settings, variable
from tierflow.storage.keys import normalize_prefix
from tierflow.storage.urls import LOCAL_SCHEMES, shown_url
from tierflow.transform.keyring import KeyRing

CHUNKED = "chunked"
KAFKA_LOCAL = "kafka-local"
TOPIC_BASED_RLMM = (
    "org.apache.kafka.server.log.remote.metadata.storage.TopicBasedRemoteLogMetadataManager"
)
LOCAL_TIERED_STORAGE = "org.apache.kafka.server.log.remote.storage.LocalTieredStorage"
AIVEN_RSM = "io.aiven.kafka.tieredstorage.RemoteStorageManager"
# Aiven's chunk.size range: [1, Integer.MAX_VALUE / 2].
MAX_AIVEN_CHUNK_SIZE = 1_073_741_823

Properties = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Section:
    """A group of properties under one heading; ``notes`` are comments printed above them."""

    title: str
    properties: Properties = ()
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class BrokerConfig:
    layout: str
    bucket: str  # as messages may show it: no credentials
    sections: tuple[Section, ...]
    key_pairs: tuple[BrokerKeyPair, ...] = field(default=())

    def properties(self) -> dict[str, str]:
        """Every property, in the order ``render`` prints them."""
        return {key: value for s in self.sections for key, value in sorted(s.properties)}

    def render(self) -> str:
        """server.properties lines: a heading comment per group, each group's keys sorted."""
        lines = [
            f"# Kafka broker settings for tierflow's bucket {_one_line(self.bucket)}",
            f"# (layout {self.layout}), printed by `tierflow broker-config`.",
        ]
        for section in self.sections:
            lines += ["", f"# ----- {section.title} -----"]
            lines += [f"# {_one_line(note)}" for note in section.notes]
            # Keys are Kafka's and Aiven's names (key ids are checked): only values need escaping.
            lines += [f"{key}={escape_value(value)}" for key, value in sorted(section.properties)]
        return "\n".join(lines) + "\n"


def broker_config(settings: Settings, options: BrokerOptions) -> BrokerConfig:
    """The settings for ``settings``' bucket and layout; BrokerConfigError for bad input.
    With a key ring, the key pairs are written to ``options.key_dir`` first."""
    options.check()
    try:
        shown = shown_url(settings.remote_storage)
    except ValueError:  # an unclosed IPv6 bracket: nothing of it can be shown safely
        raise BrokerConfigError(f"{variable('remote_storage')}: neither a path nor a URL") from None
    common = (_enable_section(), _metadata_section(options.listener_name))
    if settings.storage.layout == KAFKA_LOCAL:
        return BrokerConfig(KAFKA_LOCAL, shown, (*common, _local_tiered_storage(settings, options)))
    if settings.storage.layout != CHUNKED:
        raise BrokerConfigError(
            f"{variable('storage_layout')}={settings.storage.layout}: no Kafka broker plugin "
            f"reads this layout; broker-config knows {CHUNKED} (Aiven's plugin) and {KAFKA_LOCAL} "
            "(Kafka's LocalTieredStorage)"
        )
    chunks, backend = _chunk_section(settings), _backend_section(settings, options)
    pairs = _key_pairs(settings, options)  # written last: only once the rest is good
    sections = (
        *common,
        _aiven_section(options.class_path),
        chunks,
        backend,
        _encryption_section(pairs),
        _cache_section(),
    )
    return BrokerConfig(CHUNKED, shown, sections, pairs)


# -- the groups ------------------------------------------------------------------------------


def _enable_section() -> Section:
    return Section(
        "tiered storage",
        (("remote.log.storage.system.enable", "true"),),
        ("Topics tier once they have remote.storage.enable=true.",),
    )


def _metadata_section(listener: str) -> Section:
    return Section(
        "remote log metadata manager",
        (
            ("remote.log.metadata.manager.class.name", TOPIC_BASED_RLMM),
            ("remote.log.metadata.manager.listener.name", listener),
        ),
        (
            "Segment states live in the __remote_log_metadata topic, reached on this listener.",
            "A single broker needs rlmm.config.remote.log.metadata.topic.replication.factor=1.",
        ),
    )


def _class_path(class_path: str | None, jars: str, example: str) -> tuple[Properties, str]:
    """The class path property when given; else a note saying where the jars must be."""
    if class_path is not None:
        return (("remote.log.storage.manager.class.path", class_path),), f"Its jars: {jars}."
    return (), (
        f"Put its jars ({jars}) in the broker's libs/, or set "
        f"remote.log.storage.manager.class.path={example} (--class-path)."
    )


def _aiven_section(class_path: str | None) -> Section:
    jars, example = "core and storage backend", "/path/to/core/*:/path/to/storage/*"
    path, note = _class_path(class_path, jars, example)
    return Section(
        "remote storage manager: Aiven's tiered-storage-for-apache-kafka",
        (("remote.log.storage.manager.class.name", AIVEN_RSM), *path),
        (note,),
    )


def _chunk_section(settings: Settings) -> Section:
    if settings.storage.chunk_size > MAX_AIVEN_CHUNK_SIZE:
        raise BrokerConfigError(
            f"{variable('chunk_size')}={settings.storage.chunk_size}: Aiven's chunk.size is at "
            f"most {MAX_AIVEN_CHUNK_SIZE}"
        )
    heuristic = settings.storage.compression and settings.storage.compression_heuristic
    return Section(
        "chunks and compression (as tierflow writes them)",
        (
            ("rsm.config.chunk.size", str(settings.storage.chunk_size)),
            ("rsm.config.compression.enabled", _bool(settings.storage.compression)),
            ("rsm.config.compression.heuristic.enabled", _bool(heuristic)),
        ),
        ("Reads follow each segment's manifest; these make the brokers write alike.",),
    )


def _cache_section() -> Section:
    return Section(
        "fetch chunk cache (optional, Aiven's README)",
        notes=(
            "rsm.config.fetch.chunk.cache.class=io.aiven.kafka.tieredstorage.fetch.cache."
            "DiskChunkCache",
            "rsm.config.fetch.chunk.cache.path=<an existing directory>",
            "rsm.config.fetch.chunk.cache.size=<bytes>",
        ),
    )


def _local_tiered_storage(settings: Settings, options: BrokerOptions) -> Section:
    root = local_directory(settings.remote_storage)
    if root is None:
        raise BrokerConfigError(
            f"{variable('remote_storage')}={shown_url(settings.remote_storage)}: the {KAFKA_LOCAL} "
            "layout needs a directory bucket (LocalTieredStorage reads a local directory only)"
        )
    _no_cloud_options(options, root)
    if options.key_dir is not None:
        raise BrokerConfigError(f"--key-dir: the {KAFKA_LOCAL} layout is not encrypted")
    # The layout's keys are <prefix>kafka-tiered-storage/...: the broker's dir holds the prefix.
    storage_dir = (root / settings.storage.prefix.strip("/")).resolve()
    jar = "/path/to/kafka-storage-<version>-test.jar"
    path, note = _class_path(options.class_path, "the kafka-storage test jar", jar)
    notes = (
        "Kafka's test storage manager, from the kafka-storage test jar: for tests and demos.",
        note,
        f"Segments go to {storage_dir}/kafka-tiered-storage/<topic>-<partition>-<topicId>/.",
    )
    properties = (
        ("remote.log.storage.manager.class.name", LOCAL_TIERED_STORAGE),
        ("rsm.config.dir", str(storage_dir)),
        ("rsm.config.delete.on.close", "false"),  # never empty the bucket on shutdown
        *path,
    )
    return Section("remote storage manager: Kafka's LocalTieredStorage", properties, notes)


def _no_cloud_options(options: BrokerOptions, root: Path) -> None:
    if options.s3_region or options.endpoint_url:
        option = "--s3-region" if options.s3_region else "--endpoint-url"
        raise BrokerConfigError(f"{option}: only for a cloud bucket, not directory {root}")


# -- the storage backend ---------------------------------------------------------------------


def local_directory(remote_storage: str) -> Path | None:
    """The bucket's directory, absolute, when it is one (a path or file:// URL); else None.
    An existing path that is not a directory is the setting to fix."""
    parsed = urlparse(remote_storage)
    if parsed.scheme not in LOCAL_SCHEMES:
        return None
    root = Path(parsed.path if parsed.scheme else remote_storage).expanduser().resolve()
    if root.exists() and not root.is_dir():
        raise BrokerConfigError(f"{variable('remote_storage')}={root}: not a directory")
    return root


def _backend_section(settings: Settings, options: BrokerOptions) -> Section:
    root = local_directory(settings.remote_storage)
    if root is not None:
        _no_cloud_options(options, root)
        backend = (
            ("rsm.config.storage.backend.class", FILESYSTEM_STORAGE),
            ("rsm.config.storage.root", str(root)),
        )
        title, url_prefix = "storage backend: a directory (Aiven's FileSystemStorage)", ""
        notes: tuple[str, ...] = ("Brokers must see the directory at this path.",)
    else:
        title, url_prefix, backend, notes = backend_settings(settings, options)
    prefix = url_prefix + normalize_prefix(settings.storage.prefix)
    key_prefix = (("rsm.config.key.prefix", prefix),) if prefix else ()
    return Section(title, (*backend, *key_prefix), notes)


# -- encryption ------------------------------------------------------------------------------


def _key_pairs(settings: Settings, options: BrokerOptions) -> tuple[BrokerKeyPair, ...]:
    if settings.storage.keyring is None:
        if options.key_dir is not None:
            raise BrokerConfigError(
                f"--key-dir: {variable('keyring')} is not set, so tierflow does not encrypt and "
                "there are no keys to write"
            )
        return ()
    ring = KeyRing.load(settings.storage.keyring)
    if options.key_dir is None:
        raise BrokerConfigError(
            f"--key-dir: {variable('keyring')} turns encryption on; name a directory for the "
            "brokers' PEM key files (written 0600)"
        )
    return write_broker_keys(ring, options.key_dir)


def _encryption_section(pairs: tuple[BrokerKeyPair, ...]) -> Section:
    if not pairs:
        return Section(
            "encryption",
            (("rsm.config.encryption.enabled", "false"),),
            (f"tierflow writes unencrypted ({variable('keyring')} is not set).",),
        )
    active = next(pair.key_id for pair in pairs if pair.active)
    properties = [
        ("rsm.config.encryption.enabled", "true"),
        ("rsm.config.encryption.key.pair.id", active),
        ("rsm.config.encryption.key.pairs", ",".join(pair.key_id for pair in pairs)),
    ]
    for pair in pairs:
        base = f"rsm.config.encryption.key.pairs.{pair.key_id}"
        properties += [
            (f"{base}.public.key.file", str(pair.public_key_file)),
            (f"{base}.private.key.file", str(pair.private_key_file)),
        ]
    notes = (
        "The key ring's pairs as PEM files (X.509 public, PKCS#8 private, mode 0600): copy",
        "them to every broker at these paths. New segments use the active pair.",
    )
    return Section("encryption (tierflow's key ring)", tuple(properties), notes)


# -- formatting ------------------------------------------------------------------------------


def _bool(value: bool) -> str:
    return "true" if value else "false"


def _one_line(text: str) -> str:
    return text.replace("\r", "\\r").replace("\n", "\\n")


def escape_value(value: str) -> str:
    """A value as java.util.Properties.load (ISO-8859-1) reads it back: backslashes, control
    characters, a leading space and anything outside printable ASCII escaped."""
    out = []
    for index, char in enumerate(value):
        code = ord(char)
        if char == "\\":
            out.append("\\\\")
        elif char in "\t\n\r\f":
            out.append({"\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f"}[char])
        elif char == " " and index == 0:
            out.append("\\ ")
        elif code < 0x20 or code > 0x7E:
            out.extend(_unicode_escapes(char))
        else:
            out.append(char)
    return "".join(out)


def _unicode_escapes(char: str) -> Iterable[str]:
    encoded = char.encode("utf-16-be")
    for i in range(0, len(encoded), 2):
        yield f"\\u{int.from_bytes(encoded[i : i + 2]):04x}"
