"""Bucket URLs as messages may show them: without credentials someone put in by mistake."""

from __future__ import annotations

from urllib.parse import urlparse, urlunparse

# The schemes of an Azure Blob Storage container's URL (here, not in azure_blob.py, so that
# telling the buckets apart imports no Azure SDK).
AZURE_SCHEMES = ("abfs", "abfss", "wasb", "wasbs")
# A local directory as bucket: a path, or a file: URL.
LOCAL_SCHEMES = ("", "file")


def is_local_url(url: str) -> bool:
    """A local directory, which needs no connection resolved by the caller."""
    return urlparse(url).scheme in LOCAL_SCHEMES


def shown_url(url: str) -> str:
    """``url`` fit for a message: credentials (userinfo), query and fragment left out."""
    parsed = urlparse(url)
    netloc, path = parsed.netloc, parsed.path
    if "@" in netloc:
        netloc = "***@" + netloc.rpartition("@")[2]
    elif not netloc and "@" in path:  # "s3:key:secret@bucket", the // forgotten
        path = "***@" + path.rpartition("@")[2]
    return urlunparse(parsed._replace(netloc=netloc, path=path, query="", fragment=""))
