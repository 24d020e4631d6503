"""What ``tierflow broker-config`` cannot learn from tierflow's settings: the brokers' listener,
the plugin's class path, where the brokers' key files go, an S3 region, a custom endpoint.

Each is checked here, and bad input is one line naming the option (exit 2 in the CLI).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from tierflow.storage.urls import shown_url

DEFAULT_LISTENER = "PLAINTEXT"
_LISTENER = re.compile(r"[A-Za-z0-9_.-]+")
_REGION = re.compile(r"[a-z0-9-]+")


class BrokerConfigError(ValueError):
    """Input that cannot become broker settings: one line, naming the setting or option."""


@dataclass(frozen=True)
class BrokerOptions:
    listener_name: str = DEFAULT_LISTENER  # remote.log.metadata.manager.listener.name
    class_path: str | None = None  # remote.log.storage.manager.class.path
    key_dir: Path | None = None  # where the brokers' PEM key files are written
    s3_region: str | None = None
    endpoint_url: str | None = None  # an S3-compatible store, a GCS or Azure emulator

    def check(self) -> None:
        """BrokerConfigError naming the first option that is not well formed."""
        if not _LISTENER.fullmatch(self.listener_name):
            raise BrokerConfigError(
                f"--listener-name {self.listener_name!r}: expected one of the brokers' listener "
                "names (letters, digits, '_', '.', '-'), e.g. PLAINTEXT"
            )
        if self.class_path is not None and (
            not self.class_path.strip() or has_control(self.class_path)
        ):
            raise BrokerConfigError("--class-path: expected jar paths or globs, ':'-separated")
        if self.s3_region is not None and not _REGION.fullmatch(self.s3_region):
            raise BrokerConfigError(f"--s3-region {self.s3_region!r}: expected e.g. eu-west-1")
        if self.endpoint_url is not None:
            _check_endpoint(self.endpoint_url)


def _check_endpoint(url: str) -> None:
    try:
        parsed = urlparse(url)
        host, shown = parsed.hostname, shown_url(url)
    except ValueError:  # an unclosed IPv6 bracket: nothing of it can be shown safely
        raise BrokerConfigError(
            "--endpoint-url: not a URL; expected http(s)://host[:port]"
        ) from None
    if host is None or parsed.scheme not in ("http", "https") or has_control(url):
        raise BrokerConfigError(f"--endpoint-url {shown!r}: expected http(s)://host[:port]")
    if "@" in parsed.netloc or parsed.query or parsed.fragment:
        raise BrokerConfigError(
            f"--endpoint-url {shown!r}: no credentials, query or fragment (the brokers' "
            "credentials go into the plugin's own settings, by hand)"
        )


def has_control(text: str) -> bool:
    return any(ord(c) < 0x20 or ord(c) == 0x7F for c in text)
