"""The exit codes of ``tierflow`` and which failure gets which, in one table.

A script (or the operator at 3 a.m.) can tell a typo in a setting from a missing log dir, a
corrupt segment, an unreachable bucket or an unreachable store by the exit code alone; the one
line on stderr says which file, offset, key or setting. The README's "Using the CLI" lists them.
"""

from __future__ import annotations

import sys

from tierflow.cli.common import CommandError, NotFoundError

OK = 0
FAILED = 1  # the command ran and reports a failure itself (verify found a mismatch, ...)
USAGE = 2  # bad arguments or settings: argparse's own code, kept for the operator's errors
NOT_FOUND = 3  # a file, directory, store, topic or object that must exist does not
BAD_DATA = 4  # a Kafka file that cannot be read as what it claims to be
STORAGE = 5  # the bucket refused or failed a request
STORE = 6  # the metadata store refused or failed a request
INTERRUPTED = 130  # Ctrl-C: 128 + SIGINT, as shells report it
BROKEN_PIPE = 141  # the reader went away (`| head`): 128 + SIGPIPE, as shells report it

# A failure's class, or "module:Class" for one of the library's: the table is read without
# importing those modules (SQLAlchemy, the metadata store, the bucket's factory), which every
# command would otherwise load just to build it. The module must be the one the class is
# defined in (tests/unit/cli/test_cli_imports.py checks): see ``loaded``.
ErrorClass = type[BaseException] | str

# Configuration the operator must fix, wherever a command meets it.
SETTINGS_ERRORS: tuple[ErrorClass, ...] = (
    CommandError,
    "tierflow.config_values:InvalidSettingError",
    "tierflow.metadata.engine:InvalidStoreURLError",
    "tierflow.storage.factory:UnsupportedStorageURLError",
    "tierflow.transform.errors:KeyRingError",
    # A path setting that names the wrong kind of file (a bucket dir that is a regular file).
    NotADirectoryError,
    IsADirectoryError,
    FileExistsError,
    PermissionError,
)

# First match wins: the more specific errors come before their base classes.
EXIT_CODES: tuple[tuple[tuple[ErrorClass, ...], int], ...] = (
    (
        (
            NotFoundError,
            "tierflow.kafka.errors:MissingFileError",
            "tierflow.kafka.errors:UnknownPartitionError",  # no such partition directory
            FileNotFoundError,
            "tierflow.metadata.errors:UnknownTopicError",
            "tierflow.metadata.errors:UnknownPartitionError",
            "tierflow.metadata.errors:UnknownSegmentError",
            "tierflow.rsm:RemoteResourceNotFoundError",
        ),
        NOT_FOUND,
    ),
    (SETTINGS_ERRORS, USAGE),
    (("tierflow.kafka.errors:KafkaFormatError",), BAD_DATA),
    (("tierflow.rsm:RemoteStorageError",), STORAGE),
    # StoreUnavailableError (an unreachable store) is an SQLAlchemyError.
    (("tierflow.metadata.errors:MetadataError", "sqlalchemy.exc:SQLAlchemyError"), STORE),
)


def exit_code_for(exc: BaseException) -> int | None:
    """The exit code of an expected failure; None for a bug (which keeps its traceback).
    A CommandError made of a not-found (``as_command_error``) is still a not-found: 3."""
    cause = exc.__cause__
    if isinstance(exc, CommandError) and cause is not None and _code(cause) == NOT_FOUND:
        return NOT_FOUND
    return _code(exc)


def _code(exc: BaseException) -> int | None:
    for classes, code in EXIT_CODES:
        if isinstance(exc, loaded(classes)):
            return code
    return None


def loaded(classes: tuple[ErrorClass, ...]) -> tuple[type[BaseException], ...]:
    """The classes named, of the modules imported so far: an exception of a class whose module
    was never imported cannot have been raised, so the others need not be imported to tell."""
    found = []
    for named in classes:
        if not isinstance(named, str):
            found.append(named)
            continue
        module, _, name = named.partition(":")
        if module in sys.modules:
            found.append(getattr(sys.modules[module], name))
    return tuple(found)
