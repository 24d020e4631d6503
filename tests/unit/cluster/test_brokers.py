"""TIERFLOW_BROKERS, and TIERFLOW_LOG_DIRS alone as one broker (its id from meta.properties)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.cluster.replicas import write_broker_root, write_replica
from tierflow.cluster.brokers import BrokerIdError, cluster_brokers
from tierflow.cluster.leaders import leader_log, leader_logs
from tierflow.config import BrokerSpec, InvalidSettingError, Settings
from tierflow.demo.broker import generate_log_dir
from tierflow.runtime import partition_logs


def env(tmp_path: Path, **values: str) -> dict[str, str]:
    return {"TIERFLOW_DATA_DIR": str(tmp_path), **values}


def test_brokers_setting_gives_each_broker_its_dirs_and_log_dirs_all_of_them(
    tmp_path: Path,
) -> None:
    a, b, c = (tmp_path / name for name in ("b1a", "b1b", "b2"))
    raw = f"1={a}{os.pathsep}{b}, 2={c}"
    settings = Settings.from_env(env(tmp_path, TIERFLOW_BROKERS=raw))
    assert settings.cluster.brokers == (BrokerSpec(1, (a, b)), BrokerSpec(2, (c,)))
    assert settings.log_dirs == (a, b, c)
    assert Settings.from_env(settings.as_env()) == settings


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("1", "entry '1': expected <broker id>=<log dir>"),
        ("x=/a", "entry 'x=/a': broker id 'x' is not a whole number"),
        ("-1=/a", "entry '-1=/a': broker id must be 0 to 2147483647"),
        ("1=", "entry '1=': no log dir"),
        ("1=/a,", "entry '': expected"),
        ("1=/a,1=/b", "broker 1 is given twice"),
        ("1=/a,2=/a", "log dir /a is given for brokers 1 and 2"),
    ],
)
def test_a_bad_brokers_setting_names_the_variable_and_the_entry(
    tmp_path: Path, raw: str, message: str
) -> None:
    with pytest.raises(InvalidSettingError, match=f"^TIERFLOW_BROKERS.*{message}"):
        Settings.from_env(env(tmp_path, TIERFLOW_BROKERS=raw))


def test_log_dirs_beside_brokers_must_name_the_same_dirs(tmp_path: Path) -> None:
    raw = f"1={tmp_path / 'a'},2={tmp_path / 'b'}"
    same = os.pathsep.join(str(tmp_path / n) for n in ("b", "a"))
    read = Settings.from_env(env(tmp_path, TIERFLOW_BROKERS=raw, TIERFLOW_LOG_DIRS=same))
    assert len(read.cluster.brokers) == 2
    with pytest.raises(
        InvalidSettingError, match=r"TIERFLOW_LOG_DIRS=.*same dirs as TIERFLOW_BROKERS"
    ):
        Settings.from_env(env(tmp_path, TIERFLOW_BROKERS=raw, TIERFLOW_LOG_DIRS=str(tmp_path)))


def test_brokers_given_as_values_through_a_symlink_are_the_dirs_they_point_to(
    tmp_path: Path,
) -> None:
    """A symlinked dir is the same dir whether it comes as text or as a BrokerSpec (the test
    of the real samples gives them so): log dirs, resolved, must match it."""
    real = tmp_path / "real"
    (real / "kafka1").mkdir(parents=True)
    (tmp_path / "link").symlink_to(real)
    given = tmp_path / "link" / "kafka1"
    settings = Settings.embedded(tmp_path, brokers=(BrokerSpec(1, (given,)),), log_dirs=(given,))
    assert settings.cluster.brokers == (BrokerSpec(1, (real / "kafka1",)),)
    assert settings.log_dirs == (real / "kafka1",)


def test_log_dirs_alone_are_one_broker_with_the_id_of_meta_properties(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    write_broker_root(first, 7, {})
    write_broker_root(second, None, {})
    write_replica(second, "orders", 0, [(0, 2)])
    settings = Settings.from_env(env(tmp_path, TIERFLOW_LOG_DIRS=f"{first}{os.pathsep}{second}"))
    assert settings.cluster.brokers == ()
    (broker,) = cluster_brokers(settings)
    assert (broker.broker_id, broker.log_dirs) == (7, (first, second))
    assert leader_log(settings, "orders", 0).broker == 7


def test_log_dirs_without_meta_properties_are_broker_0(tmp_path: Path) -> None:
    write_replica(tmp_path / "logs", "orders", 0, [(0, 2)])
    settings = Settings.embedded(tmp_path, log_dirs=(tmp_path / "logs",))
    assert [(f.broker, f.log.key) for f in leader_logs(settings)] == [(0, ("orders", 0))]


def test_a_zookeeper_broker_id_counts_too(tmp_path: Path) -> None:
    (tmp_path / "meta.properties").write_text("#\nversion=0\nbroker.id=3\ncluster.id=x\n")
    assert cluster_brokers(Settings.embedded(tmp_path, log_dirs=(tmp_path,)))[0].broker_id == 3


def test_log_dirs_of_two_brokers_without_brokers_setting_are_refused(tmp_path: Path) -> None:
    write_broker_root(tmp_path / "a", 1, {})
    write_broker_root(tmp_path / "b", 2, {})
    settings = Settings.embedded(tmp_path, log_dirs=(tmp_path / "a", tmp_path / "b"))
    with pytest.raises(BrokerIdError, match=r"broker 1.*broker 2.*TIERFLOW_BROKERS"):
        cluster_brokers(settings)


def test_a_brokers_entry_that_meta_properties_contradicts_is_refused(tmp_path: Path) -> None:
    write_broker_root(tmp_path / "a", 4, {})
    settings = Settings.embedded(tmp_path, brokers=(BrokerSpec(1, (tmp_path / "a",)),))
    with pytest.raises(BrokerIdError, match=r"broker 1 .*meta\.properties says broker 4"):
        cluster_brokers(settings)


def test_the_demo_broker_reads_as_before(tmp_path: Path) -> None:
    """One broker's log dir: every partition is led by it, exactly as partition_logs lists."""
    generate_log_dir(tmp_path / "kafka-logs", now_ms=1_700_000_000_000)
    settings = Settings.embedded(tmp_path)
    found = leader_logs(settings)
    assert [f.log.path for f in found] == [p.path for p in partition_logs(settings.log_dirs)]
    assert {f.broker for f in found} == {0}
    assert all(f.source == "inferred" and f.leader_epoch is not None for f in found)
    orders = leader_log(settings, "orders", 1)
    assert orders.log.high_watermark() < orders.log.log_end_offset(), "a lagging HW is kept"


def test_embedded_settings_with_brokers_read_all_their_dirs(tmp_path: Path) -> None:
    brokers = (BrokerSpec(1, (tmp_path / "a", tmp_path / "b")), BrokerSpec(2, (tmp_path / "c",)))
    settings = Settings.embedded(tmp_path, brokers=brokers)
    assert settings.log_dirs == (tmp_path / "a", tmp_path / "b", tmp_path / "c")
    assert Settings.from_env(settings.as_env()) == settings
