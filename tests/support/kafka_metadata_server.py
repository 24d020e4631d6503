"""A tiny Kafka metadata server on loopback, for testing the cluster-metadata reader.

Why it exists: the tests that can ask a real broker do (``tests/kafka``, Apache Kafka 4.1 on
loopback: DescribeConfigs with defaults, leaders and ISR, a real delete and a reassignment).
This server stays only for the answers a real broker cannot be made to give on demand: an older
release's API versions (2.7, Metadata without topic ids), a topic the client may not describe
(TOPIC_AUTHORIZATION_FAILED, which a broker gives only under an authorizer and ACLs), any
leader, epoch and ISR a test names (one broker standing for many, at one address), and a
cluster that drops every connection (``broken``). It is a real TCP server that a real
``KafkaAdminClient`` connects to over the network; nothing is mocked in-process.

What it implements, and nothing more: the Kafka wire framing (size-prefixed requests with their
headers) and three APIs, decoded and encoded with kafka-python's own protocol classes:

- ApiVersions: it answers with the API version table kafka-python records for a real Kafka
  release (``broker_version``, 3.9 by default), so the client negotiates as it would with that
  broker. An older release (e.g. 2.7) negotiates a Metadata version without topic ids.
- Metadata: one broker (itself), and the configured ``topics`` (name -> topic id, in Kafka's
  22-character form). Each partition is led by that broker unless ``assignments`` gives its
  leader, leader epoch, replicas and ISR (the other brokers are listed at the same address).
  A request naming topics gets UNKNOWN_TOPIC_OR_PARTITION for unknown
  names and TOPIC_AUTHORIZATION_FAILED for ``denied`` ones; a request for all topics omits the
  denied ones, as a broker does for topics the client may not describe. Topics named in
  ``internal`` (Kafka's Topic.isInternal list by default) carry ``is_internal``.
- DescribeConfigs (topics only): each topic's ``configs`` as DYNAMIC_TOPIC_CONFIG overrides,
  plus Kafka's defaults for the configs tierflow reads (source DEFAULT_CONFIG) where not
  overridden; UNKNOWN_TOPIC_OR_PARTITION for an unknown topic.

``topics``, ``denied`` and ``broken`` may be changed while it runs; ``broken`` makes it close
every connection at once, like a broker that is down behind a listening proxy.
"""

from __future__ import annotations

import socket
import socketserver
import struct
import threading
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kafka.protocol.admin import DescribeConfigsRequest, DescribeConfigsResponse
from kafka.protocol.broker_version_data import BROKER_API_VERSIONS
from kafka.protocol.metadata import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    MetadataRequest,
    MetadataResponse,
)

from tierflow.ids import from_kafka_uuid

UNKNOWN_TOPIC_OR_PARTITION = 3
TOPIC_AUTHORIZATION_FAILED = 29
NODE_ID = 1
_REQUESTS: dict[int, Any] = {
    ApiVersionsRequest.API_KEY: ApiVersionsRequest,
    MetadataRequest.API_KEY: MetadataRequest,
    DescribeConfigsRequest.API_KEY: DescribeConfigsRequest,
}
KAFKA_INTERNAL_TOPICS = frozenset(
    {"__consumer_offsets", "__transaction_state", "__share_group_state"}
)
# Kafka's defaults of the topic configs tierflow reads, described with source DEFAULT_CONFIG.
TOPIC_CONFIG_DEFAULTS = {
    "cleanup.policy": "delete",
    "remote.storage.enable": "false",
    "retention.ms": "604800000",
    "retention.bytes": "-1",
}
DYNAMIC_TOPIC_CONFIG, DEFAULT_CONFIG = 1, 5
TOPIC_RESOURCE = 2


class KafkaMetadataServer:
    """Serve ApiVersions and Metadata on 127.0.0.1 at an ephemeral port (see module doc)."""

    def __init__(
        self,
        topics: Mapping[str, str | None] | None = None,
        *,
        denied: set[str] | None = None,
        broker_version: tuple[int, ...] = (3, 9),
        partitions: int = 1,
        assignments: Mapping[tuple[str, int], Assignment] | None = None,
        configs: Mapping[str, Mapping[str, str]] | None = None,
        internal: frozenset[str] = KAFKA_INTERNAL_TOPICS,
    ) -> None:
        self.topics: dict[str, str | None] = dict(topics or {})
        self.denied: set[str] = set(denied or ())
        self.broken = False
        self.api_versions = BROKER_API_VERSIONS[broker_version]
        self.partitions = partitions
        self.assignments: dict[tuple[str, int], Assignment] = dict(assignments or {})
        self.configs: dict[str, dict[str, str]] = {t: dict(c) for t, c in (configs or {}).items()}
        self.internal = internal
        self.requests: list[tuple[str, int]] = []  # (api name, version), for assertions
        self._server = _TcpServer(("127.0.0.1", 0), _Handler)
        self._server.owner = self
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def __enter__(self) -> KafkaMetadataServer:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def respond(self, request: Any) -> Any:
        """The response to one decoded request, at the request's version."""
        self.requests.append((request.name, request.API_VERSION))
        if isinstance(request, ApiVersionsRequest):
            return self._api_versions()
        if isinstance(request, DescribeConfigsRequest):
            return self._describe_configs(request)
        return self._metadata(request)

    def _api_versions(self) -> Any:
        keys = [
            ApiVersionsResponse.ApiVersion(api_key=key, min_version=low, max_version=high)
            for key, (low, high) in sorted(self.api_versions.items())
        ]
        return ApiVersionsResponse(error_code=0, api_keys=keys, throttle_time_ms=0)

    def _metadata(self, request: Any) -> Any:
        if request.topics is None:
            names = [name for name in sorted(self.topics) if name not in self.denied]
        else:
            names = [topic.name for topic in request.topics]
        nodes = {NODE_ID, *(n for a in self.assignments.values() for n in (*a.replicas, a.leader))}
        brokers = [
            MetadataResponse.MetadataResponseBroker(
                node_id=node, host="127.0.0.1", port=self.port, rack=None
            )
            for node in sorted(nodes - {-1})
        ]
        return MetadataResponse(
            throttle_time_ms=0,
            brokers=brokers,
            cluster_id="tierflow-test-cluster",
            controller_id=NODE_ID,
            topics=[self._topic(name) for name in names],
        )

    def _topic(self, name: str) -> Any:
        topic = MetadataResponse.MetadataResponseTopic
        if name in self.denied:
            return topic(error_code=TOPIC_AUTHORIZATION_FAILED, name=name, topic_id=_NO_ID)
        if name not in self.topics:
            return topic(error_code=UNKNOWN_TOPIC_OR_PARTITION, name=name, topic_id=_NO_ID)
        text = self.topics[name]
        return topic(
            error_code=0,
            name=name,
            topic_id=_NO_ID if text is None else from_kafka_uuid(text),
            is_internal=name in self.internal,
            partitions=[self._partition(name, p) for p in range(self.partitions)],
        )

    def _describe_configs(self, request: Any) -> Any:
        return DescribeConfigsResponse(
            throttle_time_ms=0,
            results=[self._topic_configs(r.resource_name) for r in request.resources],
        )

    def _topic_configs(self, name: str) -> Any:
        result = DescribeConfigsResponse.DescribeConfigsResult
        entry = result.DescribeConfigsResourceResult
        if name not in self.topics:
            return result(
                error_code=UNKNOWN_TOPIC_OR_PARTITION,
                error_message=None,
                resource_type=TOPIC_RESOURCE,
                resource_name=name,
                configs=[],
            )
        own = self.configs.get(name, {})
        values = {
            **{k: (v, DEFAULT_CONFIG) for k, v in TOPIC_CONFIG_DEFAULTS.items()},
            **{k: (v, DYNAMIC_TOPIC_CONFIG) for k, v in own.items()},
        }
        configs = [
            entry(
                name=key,
                value=value,
                read_only=False,
                config_source=source,
                is_sensitive=False,
                synonyms=[],
            )
            for key, (value, source) in sorted(values.items())
        ]
        return result(
            error_code=0,
            error_message=None,
            resource_type=TOPIC_RESOURCE,
            resource_name=name,
            configs=configs,
        )

    def _partition(self, topic: str, index: int) -> Any:
        given = self.assignments.get((topic, index))
        state = given or Assignment(leader=NODE_ID, leader_epoch=0, replicas=(NODE_ID,))
        return MetadataResponse.MetadataResponseTopic.MetadataResponsePartition(
            error_code=0,
            partition_index=index,
            leader_id=state.leader,
            leader_epoch=state.leader_epoch,
            replica_nodes=list(state.replicas),
            isr_nodes=list(state.replicas if state.isr is None else state.isr),
            offline_replicas=[],
        )


@dataclass(frozen=True)
class Assignment:
    """What the fake cluster says of one partition; ``isr=None`` means all replicas."""

    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...] | None = None


_NO_ID = uuid.UUID(int=0)  # what a broker sends for a topic it knows no id of


class _TcpServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    owner: KafkaMetadataServer


class _Handler(socketserver.BaseRequestHandler):
    """One client connection: read framed requests, write framed responses, in order."""

    server: _TcpServer

    def handle(self) -> None:
        owner = self.server.owner
        sock: socket.socket = self.request
        while not owner.broken:
            frame = _read_frame(sock)
            if frame is None:
                return
            api_key, version = struct.unpack_from(">hh", frame)
            request_class = _REQUESTS.get(api_key)
            if request_class is None:
                return  # a broker closes the connection on an API it does not know
            request = request_class.decode(frame, version=version, header=True)
            response = owner.respond(request)
            response.API_VERSION = version
            response.with_header(correlation_id=request.header.correlation_id)
            sock.sendall(response.encode(header=True, framed=True))


def _read_frame(sock: socket.socket) -> bytes | None:
    """One size-prefixed request; None when the client has gone."""
    size = _read_exactly(sock, 4)
    return None if size is None else _read_exactly(sock, struct.unpack(">i", size)[0])


def _read_exactly(sock: socket.socket, count: int) -> bytes | None:
    chunks, left = [], count
    while left:
        try:
            chunk = sock.recv(left)
        except OSError:
            return None
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
