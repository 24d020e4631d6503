"""The secrets the security tests plant, and every form in which a leak of them would show.

A secret rarely leaks verbatim only: a password sits URL-quoted inside a database URL, a key
is logged as PEM lines, base64 or a big integer. Each ``Secret`` lists those forms as bytes,
so one scanner can search text files, binary files and database dumps alike.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, quote_plus

from Crypto.PublicKey import RSA

# Distinctive fake credentials. They carry the characters that need escaping in URLs and JSON
# ('/', '+', '@', ':', '%'), so an escaped leak differs from the raw value.
AWS_ACCESS_KEY_ID = "AKIASECLEAKTEST7Q2ZX"
AWS_SECRET_ACCESS_KEY = "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"
AWS_SESSION_TOKEN = "tfSecLeakSession/Token+c0ffee7Q2Z"
PG_USER = "tierflow_sec"
PG_PASSWORD = "tfSecLeakPg-7Qz@x/y:z%21"
# Shortest form worth searching for: shorter ones would match by chance in binary files.
MIN_NEEDLE = 12


@dataclass(frozen=True)
class Secret:
    """One secret: a name for reports, and the byte strings any of which betrays it."""

    name: str
    forms: dict[str, bytes] = field(default_factory=dict)

    def __post_init__(self) -> None:
        short = [label for label, form in self.forms.items() if len(form) < MIN_NEEDLE]
        if short:
            raise ValueError(f"{self.name}: forms too short to search for: {short}")


def text_forms(value: str) -> dict[str, bytes]:
    """A string secret as written, URL-quoted (path and form style), and base64."""
    return {
        "raw": value.encode(),
        "url-quoted": quote(value, safe="").encode(),
        "url-quoted-plus": quote_plus(value).encode(),
        "base64": base64.b64encode(value.encode()),
    }


def aws_secrets() -> list[Secret]:
    # The access key id names a key rather than proving its possession; it is still kept out
    # of logs, as the S3 DAG test already demands.
    return [
        Secret("aws access key id", text_forms(AWS_ACCESS_KEY_ID)),
        Secret("aws secret access key", text_forms(AWS_SECRET_ACCESS_KEY)),
        Secret("aws session token", text_forms(AWS_SESSION_TOKEN)),
    ]


def azure_account_key_secret(account_key: str) -> Secret:
    """A storage account key: as configured (base64), in its other text forms, and decoded."""
    return Secret(
        "azure account key", {**text_forms(account_key), "decoded": base64.b64decode(account_key)}
    )


def gcp_private_key_secret(private_pem: str) -> Secret:
    """A service account's private key as its JSON key file holds it: the PEM whole, in the
    text forms, and line by line (what survives the JSON escaping of its newlines)."""
    lines = [line for line in private_pem.splitlines() if line and not line.startswith("-----")]
    pem_lines = {f"pem-line-{i}": line.encode() for i, line in enumerate(lines)}
    return Secret("gcp service account private key", {**text_forms(private_pem), **pem_lines})


def gcp_access_token_secret(token: str) -> Secret:
    return Secret("gcp access token", text_forms(token))


def pg_password_secret(password: str = PG_PASSWORD) -> Secret:
    return Secret("postgresql password", text_forms(password))


def private_key_secret(private_pem: Path, public_pem: Path) -> Secret:
    """The private key: its PEM (whole and line by line), DER, and the private numbers.

    PEM lines that also occur in the public key are left out: the modulus is public.
    """
    pem = private_pem.read_bytes()
    key = RSA.import_key(pem)
    public_body = b"".join(_pem_body_lines(public_pem.read_bytes()))
    lines = [line for line in _pem_body_lines(pem) if line not in public_body]
    der = key.export_key(format="DER", pkcs=8)
    forms: dict[str, bytes] = {
        "pem": pem.strip(),
        "der": der,
        "der-base64": base64.b64encode(der),
        "der-base64-urlsafe": base64.urlsafe_b64encode(der),
    }
    for number in ("d", "p", "q"):
        value = int(getattr(key, number))
        raw = value.to_bytes((value.bit_length() + 7) // 8, "big")
        forms[f"{number}-decimal"] = str(value).encode()
        forms[f"{number}-hex"] = format(value, "x").encode()
        forms[f"{number}-bytes"] = raw
        forms[f"{number}-base64"] = base64.b64encode(raw)
    for number, line in enumerate(lines):
        forms[f"pem-line-{number}"] = line
    return Secret(f"private key {private_pem.name}", forms)


def _pem_body_lines(pem: bytes) -> list[bytes]:
    return [
        line.strip() for line in pem.splitlines() if line.strip() and not line.startswith(b"-----")
    ]
