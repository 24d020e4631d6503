"""One page of partitions: what the per-partition sections show at cluster scale.

Partitions are ordered by topic name, then number, as everywhere in tierflow. A page past the
last one is empty rather than the last one again, so a script that pages until ``pages``
stops.
"""

from __future__ import annotations

from collections.abc import Sequence

from tierflow.operator_view.disk import PartitionName
from tierflow.operator_view.model import PartitionPage
from tierflow.operator_view.options import ViewOptions


def partition_page(
    keys: Sequence[PartitionName], options: ViewOptions
) -> tuple[PartitionPage, list[PartitionName]]:
    """The page ``options`` asks for, and the (topic, partition) keys on it, in order."""
    total = len(keys)
    if not options.lists_partitions:
        page = PartitionPage(options.topic, options.partition, False, 1, options.limit, total, 0, 0)
        return page, []
    pages = max(-(-total // options.limit), 1)
    first = (options.page - 1) * options.limit
    page = PartitionPage(
        options.topic, options.partition, True, options.page, options.limit, total, pages, first
    )
    return page, list(keys[first : first + options.limit])


def page_range(page: PartitionPage) -> str:
    """``partitions 51-100 of 500``: which of the matching partitions a page holds."""
    last = min(page.first + page.limit, page.total)
    if page.first >= last:
        return f"none: page {page.page} is past the last ({page.pages}) of {page.total:,}"
    return f"partitions {page.first + 1:,}-{last:,} of {page.total:,}"
