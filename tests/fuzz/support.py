"""Shared pieces of the property-based tests: a case counter, scratch files and mutations."""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from hypothesis import strategies as st

from tierflow.kafka.errors import KafkaFormatError

F = TypeVar("F", bound=Callable[..., Any])

# Passing cases per property, printed at the end of the session by conftest.py.
CASES: Counter[str] = Counter()

# One directory for the whole session: hypothesis runs a test body many times per pytest
# fixture, so function-scoped tmp_path would be shared between cases anyway.
_SCRATCH = Path(tempfile.mkdtemp(prefix="tierflow-fuzz-"))
atexit.register(shutil.rmtree, _SCRATCH, ignore_errors=True)


def counted(fn: F) -> F:
    """Count each case that passes; goes under ``@given`` so hypothesis sees the signature."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        result = fn(*args, **kwargs)
        CASES[f"{fn.__module__.rsplit('.', 1)[-1]}::{fn.__name__}"] += 1
        return result

    return wrapper  # type: ignore[return-value]


def scratch_file(name: str, data: bytes) -> Path:
    """Write ``data`` to a file named ``name`` in the session's scratch directory."""
    path = _SCRATCH / name
    path.write_bytes(data)
    return path


def assert_names_file(exc: KafkaFormatError, path: Path) -> None:
    """The project's rule: an error about a file says which file."""
    assert exc.path == str(path)
    assert str(path) in str(exc)


@st.composite
def mutated(draw: st.DrawFn, valid: st.SearchStrategy[bytes]) -> bytes:
    """Valid bytes, then one to three edits: bit flips, truncation, overwrites, garbage."""
    data = bytearray(draw(valid))
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["flip", "truncate", "overwrite", "append", "delete"]))
        if kind == "append" or not data:
            data += draw(st.binary(min_size=1, max_size=16))
        elif kind == "flip":
            at = draw(st.integers(0, len(data) - 1))
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif kind == "truncate":
            del data[draw(st.integers(0, len(data) - 1)) :]
        elif kind == "overwrite":
            at = draw(st.integers(0, len(data) - 1))
            data[at : at + 4] = draw(st.binary(min_size=1, max_size=4))
        else:
            at = draw(st.integers(0, len(data) - 1))
            del data[at : at + draw(st.integers(1, 8))]
    return bytes(data)


def valid_or_mutated(valid: st.SearchStrategy[bytes]) -> st.SearchStrategy[bytes]:
    """Arbitrary bytes, valid bytes and mutated valid bytes: the three inputs a parser meets."""
    return st.one_of(st.binary(max_size=200), valid, mutated(valid))
