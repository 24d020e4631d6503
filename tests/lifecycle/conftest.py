from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.tiered import LAYOUTS, Tiered, build_tiered


@pytest.fixture(params=sorted(LAYOUTS))
def tiered(request: pytest.FixtureRequest, tmp_path: Path) -> Tiered:
    return build_tiered(tmp_path, layout=request.param)
