"""An HTTP forwarder on loopback between tierflow and the Iceberg REST catalog, for what only
the wire shows: which requests carried which ``Authorization`` (OAuth2), and a catalog that
goes away in the middle of a table commit.

Every request is forwarded unchanged and recorded. ``at_commit(hook, before=...)`` arms one
table commit (``POST /v1/namespaces/<ns>/tables/<table>``): the hook runs (the test stops the
server there) before the commit is forwarded, or after the catalog applied it, and either way
the client's connection is closed unanswered, as when a catalog dies mid-request.
"""

from __future__ import annotations

import http.client
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

COMMIT = re.compile(r"^/v1/(?:[^/]+/)?namespaces/[^/]+/tables/[^/?]+$")
_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    authorization: str | None
    body: bytes


@dataclass
class _Armed:
    hook: Callable[[], None]
    before: bool


class RestTap:
    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.seen: list[Seen] = []
        self.cut: list[str] = []  # the paths of the commits cut
        self._armed: _Armed | None = None
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self.uri = f"http://127.0.0.1:{self._server.server_address[1]}"

    def at_commit(self, hook: Callable[[], None], *, before: bool) -> None:
        """Cut the next table commit: ``hook`` before forwarding it, or after its answer."""
        self._armed = _Armed(hook, before)

    def _take(self, seen: Seen) -> _Armed | None:
        with self._lock:
            self.seen.append(seen)
            if seen.method != "POST" or not COMMIT.match(seen.path) or self._armed is None:
                return None
            armed, self._armed = self._armed, None
            self.cut.append(seen.path)
            return armed


@contextmanager
def running_tap(upstream_port: int) -> Iterator[RestTap]:
    tap = RestTap(upstream_port)
    thread = threading.Thread(target=tap._server.serve_forever, daemon=True)
    thread.start()
    try:
        yield tap
    finally:
        tap._server.shutdown()
        tap._server.server_close()


def _handler_for(tap: RestTap) -> type[BaseHTTPRequestHandler]:
    class Handler(_Forwarder):
        pass

    Handler.tap = tap
    return Handler


class _Forwarder(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    tap: RestTap

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the suite's output is for failures."""

    def do_GET(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        armed = self.tap._take(
            Seen(self.command, self.path, self.headers.get("Authorization"), body)
        )
        if armed is not None and armed.before:
            armed.hook()
        try:
            status, reason, headers, payload = self._forward(body)
        except OSError:  # the catalog is gone: so is the answer
            self.close_connection = True
            return
        if armed is not None:
            if not armed.before:
                armed.hook()  # after the catalog applied it: its answer never arrives
            self.close_connection = True
            return
        self.send_response(status, reason)
        for key, value in headers:
            if key.lower() not in _HOP_BY_HOP:
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    do_POST = do_PUT = do_DELETE = do_HEAD = do_GET

    def _forward(self, body: bytes) -> tuple[int, str, list[tuple[str, str]], bytes]:
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
        headers["Content-Length"] = str(len(body))
        upstream = http.client.HTTPConnection("127.0.0.1", self.tap.upstream_port, timeout=60)
        try:
            upstream.request(self.command, self.path, body=body, headers=headers)
            response = upstream.getresponse()
            return response.status, response.reason, response.getheaders(), response.read()
        finally:
            upstream.close()
