"""tierflow.cluster.broker_config: the broker settings for each layout and bucket kind, the
key pairs written for the brokers, and the refusals, each one line naming the setting."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from Crypto.PublicKey import RSA

from tierflow.cluster.broker_config import (
    AIVEN_RSM,
    LOCAL_TIERED_STORAGE,
    TOPIC_BASED_RLMM,
    BrokerConfig,
    broker_config,
    escape_value,
)
from tierflow.cluster.broker_options import BrokerConfigError, BrokerOptions
from tierflow.config import Settings
from tierflow.transform.keyring import KeyRing

COMMON = {
    "remote.log.storage.system.enable": "true",
    "remote.log.metadata.manager.class.name": TOPIC_BASED_RLMM,
    "remote.log.metadata.manager.listener.name": "PLAINTEXT",
}
STORAGE = "io.aiven.kafka.tieredstorage.storage"


def parse_properties(text: str) -> dict[str, str]:
    """The key=value lines of ``text`` (the tests' paths need no unescaping)."""
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    return dict(line.split("=", 1) for line in lines)


def settings(tmp_path: Path, **overrides: object) -> Settings:
    return Settings.embedded(tmp_path, **overrides)


def config(tmp_path: Path, options: BrokerOptions | None = None, **overrides) -> BrokerConfig:
    return broker_config(settings(tmp_path, **overrides), options or BrokerOptions())


def rsm(properties: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in properties.items() if k.startswith("rsm.config.")}


# -- chunked, a directory bucket --------------------------------------------------------------


def test_chunked_directory_bucket_is_aivens_filesystem_storage(tmp_path: Path) -> None:
    got = config(tmp_path)
    assert got.properties() == {
        **COMMON,
        "remote.log.storage.manager.class.name": AIVEN_RSM,
        "rsm.config.chunk.size": "4194304",
        "rsm.config.compression.enabled": "true",
        "rsm.config.compression.heuristic.enabled": "true",
        "rsm.config.storage.backend.class": f"{STORAGE}.filesystem.FileSystemStorage",
        "rsm.config.storage.root": str(tmp_path.resolve() / "bucket"),
        "rsm.config.encryption.enabled": "false",
    }
    assert got.layout == "chunked" and got.key_pairs == ()


def test_the_printed_lines_are_the_properties_in_commented_groups(tmp_path: Path) -> None:
    got = config(tmp_path)
    text = got.render()
    assert parse_properties(text) == got.properties()
    assert list(parse_properties(text)) == list(got.properties())  # the same order
    groups = text.split("\n\n")
    assert all(g.startswith("# ") for g in groups)
    for group in groups[1:]:
        assert group.startswith("# ----- ")
        keys = [line.split("=")[0] for line in group.splitlines() if not line.startswith("#")]
        assert keys == sorted(keys)


def test_the_storage_prefix_is_aivens_key_prefix(tmp_path: Path) -> None:
    got = config(tmp_path, storage_prefix="/tiered/x")
    assert got.properties()["rsm.config.key.prefix"] == "tiered/x/"
    assert "rsm.config.storage.key.prefix" not in got.render()  # the README's slip, Aiven #797


def test_settings_as_tierflow_writes_them(tmp_path: Path) -> None:
    got = rsm(config(tmp_path, chunk_size=1024, compression=False).properties())
    assert got["rsm.config.chunk.size"] == "1024"
    assert got["rsm.config.compression.enabled"] == "false"
    # Aiven refuses the heuristic without compression.
    assert got["rsm.config.compression.heuristic.enabled"] == "false"
    got = rsm(config(tmp_path, compression_heuristic=False).properties())
    assert got["rsm.config.compression.heuristic.enabled"] == "false"


def test_a_chunk_size_past_aivens_range_is_refused(tmp_path: Path) -> None:
    with pytest.raises(BrokerConfigError, match=r"^TIERFLOW_CHUNK_SIZE=1073741824: "):
        config(tmp_path, chunk_size=1 << 30)


def test_a_file_url_is_the_same_directory(tmp_path: Path) -> None:
    got = config(tmp_path, remote_storage=f"file://{tmp_path}/b")
    assert got.properties()["rsm.config.storage.root"] == str(tmp_path.resolve() / "b")


def test_a_relative_bucket_is_printed_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    got = config(tmp_path, remote_storage="rel/bucket")
    assert got.properties()["rsm.config.storage.root"] == str(tmp_path.resolve() / "rel/bucket")


def test_a_bucket_that_is_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    with pytest.raises(BrokerConfigError, match=r"^TIERFLOW_REMOTE_STORAGE=.*: not a directory"):
        config(tmp_path, remote_storage=str(tmp_path / "f"))


def test_the_class_path_is_printed_when_given_and_a_comment_otherwise(tmp_path: Path) -> None:
    given = config(tmp_path, BrokerOptions(class_path="/opt/aiven/core/*:/opt/aiven/s3/*"))
    key = "remote.log.storage.manager.class.path"
    assert given.properties()[key] == "/opt/aiven/core/*:/opt/aiven/s3/*"
    missing = config(tmp_path)
    assert key not in missing.properties()
    assert f"# Put its jars (core and storage backend) in the broker's libs/, or set {key}=" in (
        missing.render()
    )


def test_the_listener_is_an_option(tmp_path: Path) -> None:
    got = config(tmp_path, BrokerOptions(listener_name="INTERNAL"))
    assert got.properties()["remote.log.metadata.manager.listener.name"] == "INTERNAL"


# -- chunked, cloud buckets ------------------------------------------------------------------


def test_s3_bucket_region_endpoint_and_prefix(tmp_path: Path) -> None:
    options = BrokerOptions(s3_region="eu-west-1", endpoint_url="http://127.0.0.1:9000")
    got = config(tmp_path, options, remote_storage="s3://tier-bucket/kafka", storage_prefix="p")
    assert rsm(got.properties()) == {
        "rsm.config.chunk.size": "4194304",
        "rsm.config.compression.enabled": "true",
        "rsm.config.compression.heuristic.enabled": "true",
        "rsm.config.storage.backend.class": f"{STORAGE}.s3.S3Storage",
        "rsm.config.storage.s3.bucket.name": "tier-bucket",
        "rsm.config.storage.s3.region": "eu-west-1",
        "rsm.config.storage.s3.endpoint.url": "http://127.0.0.1:9000",
        "rsm.config.key.prefix": "kafka/p/",  # the URL's prefix, then tierflow's
        "rsm.config.encryption.enabled": "false",
    }
    text = got.render()
    assert "rsm.config.storage.aws.access.key.id" in text  # named in a comment, never set
    assert "path.style.access.enabled=true" in text


def test_s3_without_a_region_says_it_is_required(tmp_path: Path) -> None:
    got = config(tmp_path, remote_storage="s3://b")
    assert "rsm.config.storage.s3.region" not in got.properties()
    assert "rsm.config.key.prefix" not in got.properties()
    assert "# rsm.config.storage.s3.region=<the bucket's region> is required" in got.render()


def test_gcs_bucket(tmp_path: Path) -> None:
    got = config(tmp_path, remote_storage="gs://g-bucket/a/b")
    assert (
        rsm(got.properties()).items()
        >= {
            "rsm.config.storage.backend.class": f"{STORAGE}.gcs.GcsStorage",
            "rsm.config.storage.gcs.bucket.name": "g-bucket",
            "rsm.config.key.prefix": "a/b/",
        }.items()
    )
    assert "rsm.config.storage.gcs.credentials.default=true" in got.render()  # a comment


@pytest.mark.parametrize("scheme", ["abfs", "wasb"])
def test_azure_container(tmp_path: Path, scheme: str) -> None:
    url = f"{scheme}://segments@myaccount.dfs.core.windows.net/pre"
    got = config(tmp_path, remote_storage=url)
    assert (
        rsm(got.properties()).items()
        >= {
            "rsm.config.storage.backend.class": f"{STORAGE}.azure.AzureBlobStorage",
            "rsm.config.storage.azure.container.name": "segments",
            "rsm.config.storage.azure.account.name": "myaccount",
            "rsm.config.key.prefix": "pre/",
        }.items()
    )
    assert "rsm.config.storage.azure.sas.token" in got.render()


@pytest.mark.parametrize("url", ["s3://b/p", "gs://b/p", "abfs://c@account.dfs.core.windows.net/p"])
def test_no_credential_is_ever_set(tmp_path: Path, url: str) -> None:
    options = BrokerOptions(s3_region="us-east-1" if url.startswith("s3") else None)
    names = config(tmp_path, options, remote_storage=url).properties()
    secret = ("key.id", "secret", "token", "connection.string", "account.key", "credentials")
    assert not [n for n in names if any(word in n for word in secret)]


def test_credentials_in_the_url_are_refused_without_being_shown(tmp_path: Path) -> None:
    with pytest.raises(BrokerConfigError) as refused:
        config(tmp_path, remote_storage="s3://AKIAXXXX:s3cr3t@bucket/p")
    assert str(refused.value).startswith("TIERFLOW_REMOTE_STORAGE: ")
    assert "s3cr3t" not in str(refused.value)


def test_an_unknown_scheme_is_refused(tmp_path: Path) -> None:
    with pytest.raises(BrokerConfigError, match=r"^TIERFLOW_REMOTE_STORAGE=ftp://x/y: no Aiven"):
        config(tmp_path, remote_storage="ftp://x/y")


@pytest.mark.parametrize("layout", ["chunked", "kafka-local"])
def test_a_bucket_that_is_no_url_is_refused(tmp_path: Path, layout: str) -> None:
    with pytest.raises(BrokerConfigError, match=r"^TIERFLOW_REMOTE_STORAGE: neither a path nor"):
        config(tmp_path, remote_storage="s3://[bucket/p", storage_layout=layout)


@pytest.mark.parametrize(
    ("options", "option"),
    [
        pytest.param(BrokerOptions(s3_region="eu-west-1"), "--s3-region", id="s3-region"),
        pytest.param(
            BrokerOptions(endpoint_url="http://localhost:9000"), "--endpoint-url", id="endpoint-url"
        ),
    ],
)
def test_cloud_options_on_a_directory_are_refused(
    tmp_path: Path, options: BrokerOptions, option: str
) -> None:
    with pytest.raises(BrokerConfigError, match=rf"^{option}: only for a cloud bucket"):
        config(tmp_path, options)


def test_a_region_for_another_cloud_is_refused(tmp_path: Path) -> None:
    with pytest.raises(BrokerConfigError, match=r"^--s3-region: only for an s3:// bucket"):
        config(tmp_path, BrokerOptions(s3_region="eu-west-1"), remote_storage="gs://b")


# -- chunked, with tierflow's key ring ----------------------------------------------------------


@pytest.fixture(scope="module")
def ring(tmp_path_factory: pytest.TempPathFactory) -> KeyRing:
    """Two pairs, the second active: as after a rotation."""
    directory = tmp_path_factory.mktemp("ring")
    ring = KeyRing.generate(directory, "k1")
    ring.generate_key("k2", activate=True)
    ring.save()
    return ring


def test_the_key_ring_becomes_aivens_key_pairs(tmp_path: Path, ring: KeyRing) -> None:
    keys = tmp_path / "broker-keys"
    got = config(tmp_path, BrokerOptions(key_dir=keys), keyring=ring.path)
    pairs = "rsm.config.encryption.key.pairs"
    assert (
        rsm(got.properties()).items()
        >= {
            "rsm.config.encryption.enabled": "true",
            "rsm.config.encryption.key.pair.id": "k2",
            pairs: "k1,k2",
            f"{pairs}.k1.public.key.file": str(keys / "k1-public.pem"),
            f"{pairs}.k1.private.key.file": str(keys / "k1-private.pem"),
            f"{pairs}.k2.public.key.file": str(keys / "k2-public.pem"),
            f"{pairs}.k2.private.key.file": str(keys / "k2-private.pem"),
        }.items()
    )
    assert stat.S_IMODE(keys.stat().st_mode) == 0o700
    for key_id in ("k1", "k2"):
        public, private = keys / f"{key_id}-public.pem", keys / f"{key_id}-private.pem"
        assert stat.S_IMODE(public.stat().st_mode) == stat.S_IMODE(private.stat().st_mode) == 0o600
        # What Aiven's RsaKeyReader takes: X.509 SubjectPublicKeyInfo and PKCS#8.
        assert public.read_text().startswith("-----BEGIN PUBLIC KEY-----")
        assert private.read_text().startswith("-----BEGIN PRIVATE KEY-----")
        assert RSA.import_key(private.read_bytes()) == ring.key_pair(key_id).private_key
        assert private.read_text() not in got.render()


def test_writing_the_keys_again_gives_the_same_files(tmp_path: Path, ring: KeyRing) -> None:
    keys = tmp_path / "broker-keys"
    config(tmp_path, BrokerOptions(key_dir=keys), keyring=ring.path)
    first = {p.name: p.read_bytes() for p in keys.iterdir()}
    config(tmp_path, BrokerOptions(key_dir=keys), keyring=ring.path)
    assert {p.name: p.read_bytes() for p in keys.iterdir()} == first
    assert sorted(first) == ["k1-private.pem", "k1-public.pem", "k2-private.pem", "k2-public.pem"]


def test_a_pkcs1_private_key_is_written_as_pkcs8(tmp_path: Path) -> None:
    key = RSA.generate(2048)
    (tmp_path / "pub.pem").write_bytes(key.public_key().export_key())
    (tmp_path / "priv.pem").write_bytes(key.export_key(pkcs=1))  # BEGIN RSA PRIVATE KEY
    ring = KeyRing.generate(tmp_path / "ring", "k1")
    ring.add_key("old", tmp_path / "pub.pem", tmp_path / "priv.pem", activate=False)
    ring.save()
    config(tmp_path, BrokerOptions(key_dir=tmp_path / "out"), keyring=ring.path)
    written = (tmp_path / "out" / "old-private.pem").read_text()
    assert written.startswith("-----BEGIN PRIVATE KEY-----")
    assert RSA.import_key(written) == key


def test_a_pair_without_its_private_key_is_refused(tmp_path: Path) -> None:
    ring = KeyRing.generate(tmp_path / "ring", "k1")
    ring.add_key("pub-only", ring.key_pair("k1").public_key_file, activate=False)
    ring.save()
    with pytest.raises(BrokerConfigError, match=r"^TIERFLOW_KEYRING: key id 'pub-only' has no"):
        config(tmp_path, BrokerOptions(key_dir=tmp_path / "out"), keyring=ring.path)
    assert not (tmp_path / "out").exists()  # nothing written before the refusal


def test_a_key_id_aiven_cannot_list_is_refused(tmp_path: Path) -> None:
    ring = KeyRing.generate(tmp_path / "ring", "a,b")
    with pytest.raises(BrokerConfigError, match=r"^TIERFLOW_KEYRING: key id 'a,b' cannot be"):
        config(tmp_path, BrokerOptions(key_dir=tmp_path / "out"), keyring=ring.path)


def test_a_key_ring_needs_a_key_dir_and_a_key_dir_a_key_ring(tmp_path: Path, ring: KeyRing) -> None:
    with pytest.raises(BrokerConfigError, match=r"^--key-dir: TIERFLOW_KEYRING turns"):
        config(tmp_path, keyring=ring.path)
    with pytest.raises(BrokerConfigError, match=r"^--key-dir: TIERFLOW_KEYRING is not set"):
        config(tmp_path, BrokerOptions(key_dir=tmp_path / "out"))


def test_a_key_dir_that_is_a_file_is_refused(tmp_path: Path, ring: KeyRing) -> None:
    (tmp_path / "f").write_text("x")
    with pytest.raises(BrokerConfigError, match=r"^--key-dir .*: not a directory"):
        config(tmp_path, BrokerOptions(key_dir=tmp_path / "f"), keyring=ring.path)


# -- kafka-local and plain ---------------------------------------------------------------------


def test_kafka_local_is_local_tiered_storage_in_the_bucket_directory(tmp_path: Path) -> None:
    got = config(tmp_path, storage_layout="kafka-local")
    assert got.properties() == {
        **COMMON,
        "remote.log.storage.manager.class.name": LOCAL_TIERED_STORAGE,
        "rsm.config.delete.on.close": "false",
        "rsm.config.dir": str(tmp_path.resolve() / "bucket"),
    }
    text = got.render()
    assert "# Kafka's test storage manager, from the kafka-storage test jar" in text
    assert f"{tmp_path.resolve()}/bucket/kafka-tiered-storage/<topic>-<partition>-" in text


def test_kafka_local_with_a_prefix_points_the_broker_under_it(tmp_path: Path) -> None:
    got = config(tmp_path, storage_layout="kafka-local", storage_prefix="envs/dev/")
    assert got.properties()["rsm.config.dir"] == str(tmp_path.resolve() / "bucket/envs/dev")


def test_kafka_local_takes_a_class_path(tmp_path: Path) -> None:
    jar = "/opt/kafka/libs/kafka-storage-4.1.1-test.jar"
    got = config(tmp_path, BrokerOptions(class_path=jar), storage_layout="kafka-local")
    assert got.properties()["remote.log.storage.manager.class.path"] == jar


@pytest.mark.parametrize(
    "url", ["s3://b/p", "gs://b", "abfs://c@a.dfs.core.windows.net", "s3://k:secret@b"]
)
def test_kafka_local_refuses_a_cloud_bucket(tmp_path: Path, url: str) -> None:
    with pytest.raises(BrokerConfigError) as refused:
        config(tmp_path, storage_layout="kafka-local", remote_storage=url)
    message = str(refused.value)
    assert message.startswith("TIERFLOW_REMOTE_STORAGE=") and "needs a directory bucket" in message
    assert "\n" not in message and "secret" not in message


def test_kafka_local_refuses_a_key_dir(tmp_path: Path) -> None:
    with pytest.raises(BrokerConfigError, match=r"^--key-dir: the kafka-local layout is not"):
        config(tmp_path, BrokerOptions(key_dir=tmp_path), storage_layout="kafka-local")


@pytest.mark.parametrize("layout", ["plain", "something-else"])
def test_other_layouts_are_refused(tmp_path: Path, layout: str) -> None:
    with pytest.raises(BrokerConfigError, match=rf"^TIERFLOW_STORAGE_LAYOUT={layout}: no Kafka"):
        # updated, not embedded: the settings refuse an unknown layout before broker-config can
        broker_config(Settings.embedded(tmp_path).updated(storage_layout=layout), BrokerOptions())


# -- options and escaping ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "starts"),
    [
        pytest.param(
            BrokerOptions(listener_name=""), "--listener-name ''", id="empty-listener-name"
        ),
        pytest.param(
            BrokerOptions(listener_name="PLAIN TEXT"),
            "--listener-name 'PLAIN TEXT'",
            id="listener-name-with-a-space",
        ),
        pytest.param(BrokerOptions(class_path=" "), "--class-path", id="blank-class-path"),
        pytest.param(
            BrokerOptions(class_path="/a\n/b"), "--class-path", id="class-path-with-a-newline"
        ),
        pytest.param(
            BrokerOptions(s3_region="EU West"),
            "--s3-region 'EU West'",
            id="s3-region-with-a-space",
        ),
        pytest.param(
            BrokerOptions(endpoint_url="localhost:9000"),
            "--endpoint-url",
            id="endpoint-url-without-a-scheme",
        ),
        pytest.param(
            BrokerOptions(endpoint_url="http://[::1"),
            "--endpoint-url",
            id="endpoint-url-with-an-unclosed-bracket",
        ),
        pytest.param(
            BrokerOptions(endpoint_url="https://user:pw@host"),
            "--endpoint-url 'https://***@host'",
            id="endpoint-url-with-a-password",
        ),
    ],
)
def test_bad_options_are_one_line_naming_the_option(
    tmp_path: Path, options: BrokerOptions, starts: str
) -> None:
    with pytest.raises(BrokerConfigError) as refused:
        config(tmp_path, options)
    assert str(refused.value).startswith(starts) and "\n" not in str(refused.value)
    assert "pw@" not in str(refused.value)


@pytest.mark.parametrize(
    ("value", "escaped"),
    [
        ("/plain/path", "/plain/path"),
        ("C:\\kafka\\tier", "C:\\\\kafka\\\\tier"),
        ("/tmp/caf\u00e9", "/tmp/caf\\u00e9"),
        ("/tmp/\U0001f600", "/tmp/\\ud83d\\ude00"),
        (" lead", "\\ lead"),
        ("a\nb", "a\\nb"),
    ],
)
def test_values_are_escaped_as_java_properties_read_them(value: str, escaped: str) -> None:
    assert escape_value(value) == escaped
