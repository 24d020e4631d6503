from __future__ import annotations

from pathlib import Path

import pytest

from tests.retention.support import copy_all
from tests.support.tiered import Tiered, build_tiered


@pytest.fixture
def tiered(tmp_path: Path) -> Tiered:
    """Every partition copied as of the generator's clock (plain layout)."""
    t = build_tiered(tmp_path)
    copy_all(t)
    return t
