"""A fault mode for the test object stores: an HTTP proxy on loopback in front of moto_server,
Azurite or the GCS emulator (any HTTP server).

Clients talk to the proxy exactly as to the server; it forwards every request unchanged, unless
a rule says otherwise for the request it matches:

- ``status``: answer with an S3-style XML error (503 SlowDown, 500 InternalError...) without
  forwarding;
- ``stall``: hold the request for a while, then forward it (a slow response) or, with
  ``then_close``, drop the connection unanswered (a client timeout);
- ``reset``: read the request and reset the connection (TCP RST), as a load balancer might in
  the middle of a multipart upload;
- ``truncate_upload``: forward an upload with only the first half of its body, and answer with
  the server's success: a partial object that only reading back reveals;
- ``truncate_download``: forward a read, and send the announced length but only half the body;
- ``drop_response``: forward the request, then close without answering (the request took
  effect, the client cannot know).

Rules match on method, query (S3's ``partNumber``, Azure's ``comp=block``, GCS's ``upload_id``
tell a part of an upload) and path, and fire a given number of times; ``injected`` counts what
fired, and each rule's ``fired`` the paths it fired on. A rule's ``hook`` runs when it fires
(before forwarding; after it, for ``drop_response``): a test stops the server there, as a
catalog that dies mid-request. ``seen`` records every request (method, path, Authorization,
body): what only the wire shows, such as the OAuth2 headers a client sent. Everything runs in
threads of the test process, so a rule set by a test applies to clients in any process: a DAG
task's, Spark's.
"""

from __future__ import annotations

import http.client
import re
import socket
import struct
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "proxy-connection", "upgrade"}
# Integrity headers of the original body: a truncated upload must not be refused for them.
_BODY_CHECKS = ("content-md5", "x-amz-checksum-", "x-amz-sdk-checksum-algorithm")


@dataclass(frozen=True)
class Seen:
    """One request as the proxy received it."""

    method: str
    path: str  # without the query
    authorization: str | None
    body: bytes


@dataclass
class Rule:
    fault: str  # status | stall | reset | truncate_upload | truncate_download | drop_response
    method: str | None = None  # GET, PUT, POST, HEAD, DELETE; None: any
    query: str | None = None  # a query parameter the request has (e.g. "partNumber")
    query_value: str | None = None  # and its value
    times: int = 1  # how many matching requests it fires on
    skip: int = 0  # matching requests let through first
    status: int = 503
    code: str = "SlowDown"
    seconds: float = 0.0
    then_close: bool = False
    path: str | None = None  # a regular expression the whole path (no query) must match
    hook: Callable[[], None] | None = None  # run when it fires (see the module doc)
    fired: list[str] = field(default_factory=list)  # the paths it fired on

    def matches(self, method: str, query: dict[str, list[str]], path: str = "") -> bool:
        if self.method is not None and method != self.method:
            return False
        if self.path is not None and not re.fullmatch(self.path, path):
            return False
        if self.query is not None and self.query not in query:
            return False
        return self.query_value is None or self.query_value in query.get(self.query or "", [])


class FaultProxy:
    def __init__(self, upstream: str) -> None:
        parsed = urlsplit(upstream)
        self.upstream_host = parsed.hostname or "127.0.0.1"
        self.upstream_port = parsed.port or 80
        self.rules: list[Rule] = []
        self.injected: Counter[str] = Counter()
        self.seen: list[Seen] = []
        self._lock = threading.Lock()
        self._server = _QuietServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def requests(self) -> int:
        return len(self.seen)

    def add(self, rule: Rule) -> Rule:
        with self._lock:
            self.rules.append(rule)
        return rule

    def clear(self) -> None:
        with self._lock:
            self.rules.clear()
            self.injected.clear()

    def take(self, seen: Seen, query: dict[str, list[str]]) -> Rule | None:
        """The rule that fires on this request, if any, with its budget spent by one."""
        with self._lock:
            self.seen.append(seen)
            for rule in self.rules:
                if rule.times > 0 and rule.matches(seen.method, query, seen.path):
                    if rule.skip:
                        rule.skip -= 1
                        return None
                    rule.times -= 1
                    self.injected[rule.fault] += 1
                    rule.fired.append(seen.path)
                    return rule
        return None

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@contextmanager
def running_fault_proxy(upstream: str) -> Iterator[FaultProxy]:
    proxy = FaultProxy(upstream)
    proxy.start()
    try:
        yield proxy
    finally:
        proxy.stop()


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        """A connection the proxy reset on purpose, or the client gave up on: not news."""


def _handler_for(proxy: FaultProxy) -> type[BaseHTTPRequestHandler]:
    class Handler(_ProxyHandler):
        pass

    Handler.proxy = proxy
    return Handler


class _ProxyHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    proxy: FaultProxy

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the suite's output is for failures."""

    def do_GET(self) -> None:
        self._handle()

    do_PUT = do_POST = do_PATCH = do_DELETE = do_HEAD = do_GET

    def _handle(self) -> None:
        url = urlsplit(self.path)
        query = parse_qs(url.query, keep_blank_values=True)
        body = self._read_body()
        seen = Seen(self.command, url.path, self.headers.get("Authorization"), body)
        rule = self.proxy.take(seen, query)
        if rule is None:
            self._forward(body)
            return
        if rule.hook is not None and rule.fault != "drop_response":
            rule.hook()
        if rule.fault == "stall":
            time.sleep(rule.seconds)
            if rule.then_close:
                self.close_connection = True
                return
            self._forward(body)
        elif rule.fault == "status":
            self._send_error(rule.status, rule.code)
        elif rule.fault == "reset":
            self._reset()
        elif rule.fault == "truncate_upload":
            self._forward(body[: len(body) // 2], strip_checks=True)
        elif rule.fault == "truncate_download":
            self._forward(body, truncate_response=True)
        elif rule.fault == "drop_response":
            self._forward(body, answer=False, then=rule.hook)

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _forward(
        self,
        body: bytes,
        *,
        strip_checks: bool = False,
        truncate_response: bool = False,
        answer: bool = True,
        then: Callable[[], None] | None = None,
    ) -> None:
        headers = {
            k: v
            for k, v in self.headers.items()
            if k.lower() not in _HOP_BY_HOP
            and k.lower() not in ("content-length", "expect")
            and not (strip_checks and k.lower().startswith(_BODY_CHECKS))
        }
        if strip_checks:
            headers = {
                k: ("UNSIGNED-PAYLOAD" if k.lower() == "x-amz-content-sha256" else v)
                for k, v in headers.items()
            }
        headers["Content-Length"] = str(len(body))
        upstream = http.client.HTTPConnection(self.proxy.upstream_host, self.proxy.upstream_port)
        try:
            upstream.request(self.command, self.path, body=body, headers=headers)
            response = upstream.getresponse()
            payload = response.read()
            if not answer:
                if then is not None:
                    then()  # the request took effect; its answer never arrives
                self.close_connection = True
                return
            self.send_response(response.status, response.reason)
            for key, value in response.getheaders():
                if key.lower() not in _HOP_BY_HOP and key.lower() != "content-length":
                    self.send_header(key, value)
            # A HEAD answer announces the object's length, and has no body.
            length = response.getheader("Content-Length") if self.command == "HEAD" else None
            self.send_header("Content-Length", length or str(len(payload)))
            if truncate_response:
                self.send_header("Connection", "close")
                self.close_connection = True
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(payload[: len(payload) // 2] if truncate_response else payload)
        finally:
            upstream.close()

    def _send_error(self, status: int, code: str) -> None:
        xml = (
            '<?xml version="1.0" encoding="UTF-8"?>'
            f"<Error><Code>{code}</Code><Message>injected by the fault proxy</Message></Error>"
        ).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(xml)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(xml)

    def _reset(self) -> None:
        """Close with RST rather than FIN: linger on, timeout zero."""
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True
        self.connection.close()
