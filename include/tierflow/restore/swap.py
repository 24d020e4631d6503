"""A restored partition moved into its log dir in one step that a crash cannot leave half done.

A restore builds the whole partition in a staging directory beside the target, on the same
filesystem, and only moves it into place once every segment was read, checked and written:

1. ``.<topic>-<partition>.restore-replaced/`` is made, holding ``swap.json``: what is moved and
   the event that records it. From here on every run finishes the move (it never rolls back:
   the staged partition is complete and checked).
2. The target's previous content, if any, goes into that directory as ``previous/``.
3. The staging directory is renamed to the target.
4. The partition's checkpoint lines are written, the restore recorded (once: the event carries
   the swap's id), and the replaced directory removed.

A rerun finds a replaced directory with its ``swap.json`` and finishes steps 2-4 from it; one
without (killed while making it) is removed, and nothing was moved.

Why these names: Kafka's LogManager parses every directory of a log dir as ``topic-partition``
(``LocalLog.parseTopicPartitionName``); it loads and deletes one ending ``-delete``, loads one
ending ``-future`` as a replica moving in, and one ending ``-stray`` as a leftover, and refuses
to start on any other name whose part after the last ``-`` is not a partition number ("is not
in the form of topic-partition"). No name is skipped. Both names here end in a word, so a
broker started on a log dir where a restore was killed stops with Kafka's own message naming
the directory, and never loads a half-restored partition nor deletes the previous content;
rerunning the restore finishes it (tierflow's own log dir scan skips both names too).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path

from tierflow.faults import crash_point
from tierflow.kafka._fs import write_atomically
from tierflow.restore.segment_files import fsync_directory

STAGING_SUFFIX = ".restore-staging"
REPLACED_SUFFIX = ".restore-replaced"
SWAP_RECORD = "swap.json"
PREVIOUS = "previous"
_NAME_MAX = 255  # the longest file name most filesystems allow


def staging_name(name: str) -> str:
    """The staging directory of partition directory ``name``: hidden, and never a partition."""
    return _hidden(name, STAGING_SUFFIX)


def replaced_name(name: str) -> str:
    return _hidden(name, REPLACED_SUFFIX)


def _hidden(name: str, suffix: str) -> str:
    """``.<name><suffix>``; a topic name near Kafka's 249 characters is shortened, with a hash
    of the whole name, to fit a file name."""
    full = f".{name}{suffix}"
    if len(full) <= _NAME_MAX:
        return full
    digest = hashlib.sha256(name.encode()).hexdigest()[:16]
    return f".{name[: _NAME_MAX - len(suffix) - 18]}.{digest}{suffix}"


@dataclass(frozen=True)
class SwapRecord:
    """What a swap moves and records: enough for any later run to finish it alone."""

    swap_id: str
    name: str  # the partition directory, e.g. orders-0
    topic: str  # the name in the checkpoint lines (the restored-as name)
    partition: int
    start_offset: int  # the log start offset line
    next_offset: int  # the recovery point line
    topic_id: str  # the topic in the metadata store: the event's subject
    actor: str
    details: dict  # the event's details

    def as_dict(self) -> dict:
        return asdict(self)


def begin_swap(log_dir: Path, record: SwapRecord) -> None:
    """Step 1: the replaced directory and its ``swap.json``, durable before anything moves."""
    replaced = log_dir / replaced_name(record.name)
    replaced.mkdir()  # FileExistsError: another restore is moving this partition right now
    write_atomically(replaced / SWAP_RECORD, json.dumps(record.as_dict()).encode())
    fsync_directory(log_dir)
    crash_point("restore.swap_begun")


def move_in(log_dir: Path, record: SwapRecord) -> None:
    """Steps 2 and 3, each skipped when a killed run had done it."""
    target = log_dir / record.name
    staging = log_dir / staging_name(record.name)
    previous = log_dir / replaced_name(record.name) / PREVIOUS
    if not staging.exists():
        return  # renamed in already
    if target.exists():
        target.rename(previous)
        fsync_directory(log_dir)
        crash_point("restore.after_aside")
    staging.rename(target)
    fsync_directory(log_dir)
    crash_point("restore.after_swap")


def end_swap(log_dir: Path, record: SwapRecord) -> None:
    """The replaced directory (and the previous content in it) removed: the swap is over."""
    shutil.rmtree(log_dir / replaced_name(record.name))
    fsync_directory(log_dir)


def pending_swaps(log_dir: Path) -> list[SwapRecord]:
    """The swaps a killed run began in ``log_dir``; a replaced directory without its record
    (killed while making it) is removed, as nothing was moved yet."""
    if not log_dir.is_dir():
        return []
    found = []
    for child in sorted(log_dir.iterdir()):
        if not (child.name.startswith(".") and child.name.endswith(REPLACED_SUFFIX)):
            continue
        record = child / SWAP_RECORD
        if record.is_file():
            found.append(SwapRecord(**json.loads(record.read_text())))
        elif not (child / PREVIOUS).exists():
            shutil.rmtree(child)
    return found
