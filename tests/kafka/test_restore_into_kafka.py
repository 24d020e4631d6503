"""Partitions restored from the bucket load in a real broker, and consumers read them again.

One broker, stopped for each restore (a restore refuses a log dir a running broker holds):
- a partition whose directory was deleted comes back, and a consumer reads every record tiered:
  offsets, keys, values, headers and timestamps as produced; read_committed leaves out the
  aborted transaction, as it did before;
- ``--as-topic`` into a topic created through the admin API carries that topic's id, so the
  broker keeps it;
- a restore the broker would delete as stray (a topic its metadata does not know) is refused
  on one line, and nothing is written.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
from kafka import KafkaProducer

from dev.kafka_broker import KafkaCluster
from tests.kafka.produced import Record, send_all, varied
from tests.kafka.support import consume, finished_spans, register, run, settings_for
from tests.support.kafka_broker import admin, create_topic, wait_for_brokers
from tierflow.kafka.partition_metadata import PARTITION_METADATA, read_partition_metadata

pytestmark = [pytest.mark.kafka, pytest.mark.slow]
TOPIC = "restored"


def produce(cluster: KafkaCluster) -> tuple[dict[int, Record], set[int]]:
    """Plain records, a committed and an aborted transaction, then filler that rolls them."""
    now = int(time.time() * 1000)
    plain = KafkaProducer(bootstrap_servers=cluster.bootstrap, compression_type="gzip")
    sent = {r.offset: r for r in send_all(plain, TOPIC, varied(600, start_ms=now, seed=1))}
    aborted: set[int] = set()
    for commit, seed in ((True, 1000), (False, 2000)):
        tx = KafkaProducer(bootstrap_servers=cluster.bootstrap, transactional_id=f"tx-{seed}")
        tx.init_transactions()
        tx.begin_transaction()
        done = send_all(tx, TOPIC, varied(100, start_ms=now, seed=seed))
        tx.commit_transaction() if commit else tx.abort_transaction()
        tx.close()
        sent.update((r.offset, r) for r in done)
        aborted |= set() if commit else {r.offset for r in done}
    sent.update((r.offset, r) for r in send_all(plain, TOPIC, varied(900, start_ms=now, seed=3)))
    plain.close()
    return sent, aborted


@pytest.fixture(scope="module")
def tiered(kafka_broker: KafkaCluster, tmp_path_factory: pytest.TempPathFactory):
    create_topic(kafka_broker, TOPIC, segment_bytes=str(1024 * 1024))
    sent, aborted = produce(kafka_broker)
    settings = settings_for(kafka_broker, tmp_path_factory.mktemp("tierflow"))
    register(settings, TOPIC)
    time.sleep(1.5)
    copied = run(settings, "copy")
    assert copied.returncode == 0, copied.stderr
    return settings, sent, aborted


def restart_after(cluster: KafkaCluster, change) -> None:
    cluster.stop()
    try:
        change()
    finally:
        cluster.start()
        wait_for_brokers(cluster, 1)


def test_a_deleted_partition_restored_on_a_stopped_broker_is_read_again(
    kafka_broker: KafkaCluster, tiered
) -> None:
    settings, sent, aborted = tiered
    end = finished_spans(settings, TOPIC)[-1][1]
    log_dir = kafka_broker.nodes[0].log_dir
    outcome = {}

    def restore() -> None:
        shutil.rmtree(log_dir / f"{TOPIC}-0")
        outcome["done"] = run(settings, "restore", TOPIC, "--to", str(log_dir))

    restart_after(kafka_broker, restore)
    assert outcome["done"].returncode == 0, outcome["done"].stderr
    everything = consume(kafka_broker, TOPIC, committed=False)
    assert everything == [sent[o] for o in sorted(sent) if o <= end]
    committed = consume(kafka_broker, TOPIC, committed=True)
    assert committed == [sent[o] for o in sorted(sent) if o <= end and o not in aborted]
    assert aborted and max(aborted) < end, "the aborted transaction was restored too"


def test_as_topic_into_a_topic_created_in_the_cluster_carries_its_id(
    kafka_broker: KafkaCluster, tiered
) -> None:
    settings, sent, _ = tiered
    end = finished_spans(settings, TOPIC)[-1][1]
    copy_id = create_topic(kafka_broker, "restored-copy")  # what the admin API made
    log_dir = kafka_broker.nodes[0].log_dir
    outcome = {}

    def restore() -> None:
        argv = ("restore", TOPIC, "--to", str(log_dir), "--as-topic", "restored-copy")
        outcome["done"] = run(settings, *argv)

    restart_after(kafka_broker, restore)
    assert outcome["done"].returncode == 0, outcome["done"].stderr
    written = read_partition_metadata(log_dir / "restored-copy-0" / PARTITION_METADATA)
    assert written == copy_id
    assert consume(kafka_broker, "restored-copy", committed=False) == [
        sent[o] for o in sorted(sent) if o <= end
    ]


@pytest.mark.parametrize(
    ("as_topic", "said"),
    [
        ("never-created", "is not known to broker 1's metadata log"),
        (None, "the cluster has it under topic id"),
    ],
    ids=["as-a-topic-the-cluster-lacks", "the-topic-deleted-and-created-again"],
)
def test_a_restore_the_broker_would_delete_as_stray_is_refused(
    kafka_broker: KafkaCluster, tiered, as_topic: str | None, said: str
) -> None:
    settings, _, _ = tiered
    if as_topic is None:  # the tiered topic deleted and created again: another id
        _recreate(kafka_broker, TOPIC)
    log_dir = kafka_broker.nodes[0].log_dir
    before = _listing(log_dir)
    outcome = {}

    def restore() -> None:
        extra = ("--as-topic", as_topic) if as_topic else ()
        outcome["done"] = run(settings, "restore", TOPIC, "--to", str(log_dir), *extra)

    restart_after(kafka_broker, restore)
    done = outcome["done"]
    assert done.returncode != 0 and said in done.stderr and "as stray" in done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("tierflow: error:")]
    assert len(errors) == 1, done.stderr
    assert _listing(log_dir) == before  # nothing written


def _listing(log_dir: Path) -> list[str]:
    """The log dir's names, less the broker's own checkpoint temporaries: it writes
    ``replication-offset-checkpoint.tmp`` and renames it every half second."""
    return sorted(p.name for p in log_dir.iterdir() if not p.name.endswith(".tmp"))


def _recreate(cluster: KafkaCluster, name: str) -> None:
    client = admin(cluster)
    client.delete_topics([name])
    client.close()
    deadline = time.monotonic() + 60
    while True:
        try:
            create_topic(cluster, name)
            return
        except Exception:  # TopicAlreadyExists until the deletion is through
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
