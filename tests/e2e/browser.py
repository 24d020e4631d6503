"""Screenshots of Airflow's UI with Debian's headless Chromium, logged in through its form.

Chromium runs with the DevTools protocol on a loopback port rather than with ``--screenshot``:
the UI is a single-page app behind a login, so the page must be driven (type the user and
password into SimpleAuthManager's form, submit) and the screenshot taken only once the page
shows the text we wait for, not after a guessed delay. ``websockets`` comes with Airflow
(through uvicorn[standard]).
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import os
import signal
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import psutil
from websockets.sync.client import ClientConnection, connect

# Required on this machine: no sandbox as root, no GPU, and nothing that reaches the network.
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
WIDTH, HEIGHT = 1400, 900
START_TIMEOUT_S = 30


class DevTools:
    """One page's DevTools connection: send a command, get its result (events are skipped)."""

    def __init__(self, socket: ClientConnection) -> None:
        self.socket = socket
        self.ids = itertools.count(1)

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        message_id = next(self.ids)
        self.socket.send(json.dumps({"id": message_id, "method": method, "params": params}))
        while True:
            reply = json.loads(self.socket.recv(timeout=60))
            if reply.get("id") != message_id:
                continue
            if "error" in reply:
                raise RuntimeError(f"{method}: {reply['error']}")
            return reply["result"]

    def on_element(self, selector: str, action: str) -> Any:
        """Evaluate ``action`` (JavaScript, with the element as ``e``) on the first match."""
        expression = f"(e => e ? ({action}) : null)(document.querySelector({json.dumps(selector)}))"
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return result["result"].get("value")

    def exists(self, selector: str) -> bool:
        return bool(self.on_element(selector, "true"))

    def click(self, selector: str) -> None:
        if not self.on_element(selector, "(e.click(), true)"):
            raise LookupError(f"nothing on the page matches {selector!r}")

    def type_into(self, selector: str, text: str) -> None:
        """Focus the field and type: real input events, which React's forms listen to."""
        if not self.on_element(selector, "(e.focus(), true)"):
            raise LookupError(f"nothing on the page matches {selector!r}")
        self.call("Input.insertText", text=text)

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression (awaited if a promise); raises if it throws."""
        result = self.call(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression[:200]}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression: str, *, timeout_s: float = 60) -> Any:
        """Evaluate until the expression gives something truthy (errors count as not yet).

        Values come back as JSON: a DOM node is {}, so test for one with ``!!``.
        """
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                value = self.evaluate(expression)
            except RuntimeError:
                value = None
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"{expression[:200]} never held; the page shows:\n{self.page_text()[:2000]}"
                )
            time.sleep(0.5)

    def save_screenshot(self, target: Path) -> None:
        shot = self.call("Page.captureScreenshot", format="png")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(base64.b64decode(shot["data"]))

    def page_text(self) -> str:
        result = self.call(
            "Runtime.evaluate",
            expression="document.body ? document.body.innerText : ''",
            returnByValue=True,
        )
        return str(result["result"].get("value") or "")


def screenshot(
    url: str,
    target: Path,
    *,
    login: tuple[str, str],
    wait_for: Sequence[str],
    click: str | None = None,
    timeout_s: float = 60,
    chromium: str = "chromium",
) -> str:
    """Open url, log in on the form it redirects to, wait until every string in wait_for
    shows, and save a PNG of the page.

    ``click`` is a CSS selector clicked once the page shows (e.g. a view toggle), after which
    the text is awaited again. Returns the page's text at the time of the screenshot.
    """
    with _chromium(chromium) as devtools:
        devtools.call("Page.enable")
        devtools.call("Page.navigate", url=url)
        _log_in(devtools, *login, timeout_s=timeout_s)
        text = _wait_for_text(devtools, wait_for, timeout_s)
        if click is not None:
            devtools.click(click)
            text = _wait_for_text(devtools, wait_for, timeout_s)
        time.sleep(1)  # let icons and fonts finish painting
        shot = devtools.call("Page.captureScreenshot", format="png")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(base64.b64decode(shot["data"]))
        return text


@contextlib.contextmanager
def logged_in(
    url: str, *, login: tuple[str, str], timeout_s: float = 60, chromium: str = "chromium"
) -> Iterator[DevTools]:
    """Chromium on url, logged in through the form it redirects to, for a test to drive."""
    with _chromium(chromium) as devtools:
        devtools.call("Page.enable")
        devtools.call("Page.navigate", url=url)
        _log_in(devtools, *login, timeout_s=timeout_s)
        yield devtools


def _log_in(devtools: DevTools, username: str, password: str, *, timeout_s: float) -> None:
    """Fill in SimpleAuthManager's login form as a person would, and submit it."""
    deadline = time.monotonic() + timeout_s
    while not devtools.exists('input[name="username"]'):
        if time.monotonic() > deadline:
            raise TimeoutError(f"no login form; the page shows:\n{devtools.page_text()[:2000]}")
        time.sleep(0.5)
    devtools.type_into('input[name="username"]', username)
    devtools.type_into('input[name="password"]', password)
    devtools.click('button[type="submit"]')


def _wait_for_text(devtools: DevTools, wanted: Sequence[str], timeout_s: float) -> str:
    deadline = time.monotonic() + timeout_s
    while True:
        text = devtools.page_text()
        if all(w in text for w in wanted):
            return text
        if time.monotonic() > deadline:
            missing = [w for w in wanted if w not in text]
            raise TimeoutError(f"the page never showed {missing}; it shows:\n{text[:2000]}")
        time.sleep(0.5)


@contextlib.contextmanager
def _chromium(executable: str) -> Iterator[DevTools]:
    with tempfile.TemporaryDirectory(prefix="tierflow-chromium-") as profile:
        command = [
            executable,
            *CHROMIUM_FLAGS,
            f"--user-data-dir={profile}",
            f"--window-size={WIDTH},{HEIGHT}",
            "--remote-debugging-address=127.0.0.1",
            "--remote-debugging-port=0",
            "about:blank",
        ]
        log = Path(profile) / "chromium.log"
        with open(log, "wb") as out:
            process = subprocess.Popen(
                command, stdout=out, stderr=subprocess.STDOUT, process_group=0
            )
        try:
            port = _devtools_port(Path(profile), process, log)
            with connect(_page_socket(port), max_size=None, open_timeout=30) as socket:
                devtools = DevTools(socket)
                devtools.call(
                    "Emulation.setDeviceMetricsOverride",
                    width=WIDTH,
                    height=HEIGHT,
                    deviceScaleFactor=1,
                    mobile=False,
                )
                yield devtools
        finally:
            _stop(process)


def _devtools_port(profile: Path, process: subprocess.Popen, log: Path) -> int:
    """Chromium writes the port it chose into DevToolsActivePort in its profile."""
    marker = profile / "DevToolsActivePort"
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"chromium exited ({process.returncode}):\n{log.read_text()}")
        lines = marker.read_text().splitlines() if marker.exists() else []
        if lines and lines[0].isdigit():
            return int(lines[0])
        time.sleep(0.2)
    raise TimeoutError(f"chromium did not open its DevTools port:\n{log.read_text()}")


def _page_socket(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as response:
        targets = json.loads(response.read())
    return next(t["webSocketDebuggerUrl"] for t in targets if t["type"] == "page")


def _stop(process: subprocess.Popen) -> None:
    """Chromium's helpers (zygote, renderer, GPU) are in its process group; end them all."""
    try:
        helpers = psutil.Process(process.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        helpers = []
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    _, alive = psutil.wait_procs(helpers, timeout=5)
    for helper in alive:
        with contextlib.suppress(psutil.NoSuchProcess):
            helper.kill()
