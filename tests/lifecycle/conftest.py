from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.tiered import Tiered, build_tiered


@pytest.fixture
def tiered(tmp_path: Path) -> Tiered:
    return build_tiered(tmp_path)
