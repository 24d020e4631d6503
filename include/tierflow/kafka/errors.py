"""Errors for Kafka's on-disk formats.

Every error carries the file, the place in it (byte position or text line) and the reason, so an
operator can open the file at that spot instead of guessing which of many segments is broken.
"""

from __future__ import annotations

from pathlib import Path


class KafkaFormatError(Exception):
    """A Kafka file that cannot be read as the format it claims to be."""

    def __init__(
        self,
        path: str | Path,
        position: int | None,
        reason: str,
        *,
        line: int | None = None,
    ) -> None:
        self.path = str(path)
        self.position = position
        self.reason = reason
        self.line = line
        if line is not None:
            where = f"line {line}: "
        elif position is not None:
            where = f"byte {position}: "
        else:
            where = ""
        super().__init__(f"{self.path}: {where}{reason}")

    def __str__(self) -> str:
        # Defined explicitly so subclasses that also inherit OSError/KeyError keep this text.
        return str(self.args[0])

    def __reduce__(self) -> tuple:
        """Rebuilt from its fields when it crosses processes (a segment checked in a worker
        process): the default would call the class with the message alone."""
        return (_rebuild, (type(self), self.path, self.position, self.reason, self.line))


def _rebuild(
    cls: type[KafkaFormatError], path: str, position: int | None, reason: str, line: int | None
) -> KafkaFormatError:
    return cls(path, position, reason, line=line)


class CorruptRecordError(KafkaFormatError):
    """A record batch with a bad CRC, an unknown magic byte or an impossible length."""


class TruncatedDataError(KafkaFormatError):
    """A batch that is cut short by the end of the file (or of the requested range)."""


class CorruptIndexError(KafkaFormatError):
    """An .index/.timeindex/.txnindex that is malformed or disagrees with its log."""


class CorruptSnapshotError(KafkaFormatError):
    """A producer-state snapshot with an unknown version, a bad CRC or a wrong length."""


class CorruptCheckpointError(KafkaFormatError):
    """A leader-epoch/offset checkpoint or partition.metadata that Kafka would refuse."""


class CorruptMetadataRecordError(KafkaFormatError):
    """A KRaft metadata record (``__cluster_metadata``) that cannot be decoded or replayed."""


class MissingFileError(KafkaFormatError, FileNotFoundError):
    """A file or directory that must exist does not (e.g. the snapshot for an upload)."""


class UnknownPartitionError(KafkaFormatError, KeyError):
    """A log directory has no directory for the requested topic-partition."""


def format_error_fields(exc: KafkaFormatError) -> dict:
    """The error as plain values, to cross a JSON boundary (a Spark job's result) and be
    raised again on the other side by ``format_error_of``, class and all."""
    where = {"path": exc.path, "position": exc.position, "reason": exc.reason, "line": exc.line}
    return {"kind": type(exc).__name__, **where}


def format_error_of(fields: dict) -> KafkaFormatError:
    kind = globals().get(str(fields.get("kind")))
    cls = kind if isinstance(kind, type) and issubclass(kind, KafkaFormatError) else None
    return (cls or KafkaFormatError)(
        fields["path"], fields.get("position"), fields["reason"], line=fields.get("line")
    )


class ClusterMetadataError(RuntimeError):
    """The cluster's topics could not be read; nothing may be concluded about them. Here, not
    beside the client that raises it: the CLI catches it in every command, and loading
    kafka-python's clients for that would cost a copy with no cluster a sixth of a second."""

    def __init__(self, bootstrap: str, reason: str) -> None:
        self.bootstrap = bootstrap
        super().__init__(f"cannot read topic metadata from Kafka at {bootstrap}: {reason}")
