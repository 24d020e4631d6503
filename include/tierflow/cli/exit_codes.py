"""The exit codes of ``tierflow`` and which failure gets which, in one table.

A script (or the operator at 3 a.m.) can tell a typo in a setting from a missing log dir, a
corrupt segment, an unreachable bucket or an unreachable store by the exit code alone; the one
line on stderr says which file, offset, key or setting. The README's "Using the CLI" lists them.
"""

from __future__ import annotations

from sqlalchemy.exc import SQLAlchemyError

from tierflow.cli.common import CommandError, NotFoundError
from tierflow.config import InvalidSettingError
from tierflow.kafka.errors import KafkaFormatError, MissingFileError
from tierflow.kafka.errors import UnknownPartitionError as NoPartitionDirError
from tierflow.metadata.engine import InvalidStoreURLError
from tierflow.metadata.errors import (
    MetadataError,
    UnknownPartitionError,
    UnknownSegmentError,
    UnknownTopicError,
)
from tierflow.rsm import RemoteResourceNotFoundError, RemoteStorageError
from tierflow.storage.factory import UnsupportedStorageURLError
from tierflow.transform.errors import KeyRingError

OK = 0
FAILED = 1  # the command ran and reports a failure itself (verify found a mismatch, ...)
USAGE = 2  # bad arguments or settings: argparse's own code, kept for the operator's errors
NOT_FOUND = 3  # a file, directory, store, topic or object that must exist does not
BAD_DATA = 4  # a Kafka file that cannot be read as what it claims to be
STORAGE = 5  # the bucket refused or failed a request
STORE = 6  # the metadata store refused or failed a request
INTERRUPTED = 130  # Ctrl-C: 128 + SIGINT, as shells report it
BROKEN_PIPE = 141  # the reader went away (`| head`): 128 + SIGPIPE, as shells report it

# Configuration the operator must fix, wherever a command meets it.
SETTINGS_ERRORS: tuple[type[BaseException], ...] = (
    CommandError,
    InvalidSettingError,
    InvalidStoreURLError,
    UnsupportedStorageURLError,
    KeyRingError,
    # A path setting that names the wrong kind of file (a bucket dir that is a regular file).
    NotADirectoryError,
    IsADirectoryError,
    FileExistsError,
    PermissionError,
)

# First match wins: the more specific errors come before their base classes.
EXIT_CODES: tuple[tuple[tuple[type[BaseException], ...], int], ...] = (
    (
        (
            NotFoundError,
            MissingFileError,
            NoPartitionDirError,
            FileNotFoundError,
            UnknownTopicError,
            UnknownPartitionError,
            UnknownSegmentError,
            RemoteResourceNotFoundError,
        ),
        NOT_FOUND,
    ),
    (SETTINGS_ERRORS, USAGE),
    ((KafkaFormatError,), BAD_DATA),
    ((RemoteStorageError,), STORAGE),
    # StoreUnavailableError (an unreachable store) is an SQLAlchemyError.
    ((MetadataError, SQLAlchemyError), STORE),
)


def exit_code_for(exc: BaseException) -> int | None:
    """The exit code of an expected failure; None for a bug (which keeps its traceback).
    A CommandError made of a not-found (``as_command_error``) is still a not-found: 3."""
    cause = exc.__cause__
    if isinstance(exc, CommandError) and cause is not None and _code(cause) == NOT_FOUND:
        return NOT_FOUND
    return _code(exc)


def _code(exc: BaseException) -> int | None:
    for types, code in EXIT_CODES:
        if isinstance(exc, types):
            return code
    return None
