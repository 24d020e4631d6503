"""URLs in table metadata to bucket keys: the spellings Iceberg writers use map to the key
reconcile lists, so a live file is never taken for an orphan because of how it is spelt."""

from __future__ import annotations

import pytest

from tierflow.export.referenced import bucket_key
from tierflow.export.warehouse import Warehouse

KEY = "iceberg/kafka.db/orders/data/run-1/00000.parquet"


@pytest.mark.parametrize(
    ("bucket", "url", "key"),
    [
        ("/srv/bucket", f"file:///srv/bucket/{KEY}", KEY),
        ("/srv/bucket", f"file:/srv/bucket/{KEY}", KEY),
        ("s3://b/root", f"s3://b/root/{KEY}", KEY),
        ("s3://b/root", f"s3a://b/root/{KEY}", KEY),
        ("s3://b/root", f"s3n://b/root/{KEY}", KEY),
        ("/srv/bucket", f"file:///srv/other/{KEY}", None),
        ("/srv/bucket", f"file:///srv/bucket-2/{KEY}", None),
        ("s3://b/root", f"s3://c/root/{KEY}", None),
    ],
    ids=[
        "file-three-slashes",
        "file-one-slash",
        "s3",
        "s3a",
        "s3n",
        "other-directory",
        "sibling-with-the-same-start",
        "other-bucket",
    ],
)
def test_every_spelling_of_a_url_in_the_bucket_is_its_key(
    bucket: str, url: str, key: str | None
) -> None:
    assert bucket_key(Warehouse.of(bucket), url) == key
