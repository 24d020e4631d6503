"""The HTTP answers worth sending a request again for, as the cloud SDKs' own retry policies
count them: a server error, a request timeout (408) or throttling (429)."""

from __future__ import annotations


def transient_status(status: int | None) -> bool:
    return status is not None and (status >= 500 or status in (408, 429))
