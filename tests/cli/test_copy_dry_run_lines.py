"""``tierflow copy --dry-run`` names the segments it would copy in the right number: "1 segment
... at base offset 0", "2 segments ... at base offsets 0, N", from the installed script."""

from __future__ import annotations

import re
import subprocess

import pytest

from tests.cli.process import tierflow, tierflow_env
from tests.support.tiered import Tiered, build_tiered, eligible
from tierflow.demo.topics import TopicSpec

# A topic per case, named for the rolled segments of its one partition.
ROLLED = {"one": 1, "two": 2}


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Tiered, subprocess.CompletedProcess]:
    topics = tuple(TopicSpec(name=n, partitions=1, segments=s) for n, s in ROLLED.items())
    t = build_tiered(tmp_path_factory.mktemp("dry-run"), topics=topics)
    return t, tierflow(tierflow_env(t.settings), "copy", "--dry-run")


@pytest.mark.parametrize(
    ("topic", "words"),
    [("one", ("segment", "base offset")), ("two", ("segments", "base offsets"))],
    ids=["one segment", "two segments"],
)
def test_the_pending_segments_are_counted_in_words(
    dry_run: tuple[Tiered, subprocess.CompletedProcess], topic: str, words: tuple[str, str]
) -> None:
    t, done = dry_run
    assert done.returncode == 0, done.stderr
    offsets = ", ".join(str(base) for base, _end in eligible(t.log(topic, 0)))
    segments, at = words
    line = rf"{topic}-0: would copy {ROLLED[topic]} {segments} \([^)]+\) at {at} {offsets}"
    assert re.search(rf"^{line}$", done.stdout, re.MULTILINE), done.stdout
