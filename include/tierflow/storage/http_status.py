"""The HTTP answers worth sending a request again for, as the cloud SDKs' own retry policies
count them: a server error, a request timeout (408) or throttling (429)."""

from __future__ import annotations

from collections.abc import Callable


def transient_status(status: int | None) -> bool:
    return status is not None and (status >= 500 or status in (408, 429))


def transient_sdk_error(
    exc: BaseException,
    network: tuple[type[BaseException], ...],
    status_of: Callable[[BaseException], int | None],
) -> bool | None:
    """How the Azure and Google SDKs' errors are judged alike: a ``network`` error (no answer,
    or a broken one) is worth a retry, an answer by its status, and an error that ``status_of``
    finds no status for (None: not that SDK's) is left to other classifiers."""
    if isinstance(exc, network):
        return True
    status = status_of(exc)
    if status is None:
        return None
    return transient_status(status)
