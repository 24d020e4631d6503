"""Point code that reads ``Settings.from_env()`` (the CLI, Airflow tasks) at a test's settings."""

from __future__ import annotations

import pytest

from tierflow.config import Settings


def use_settings(monkeypatch: pytest.MonkeyPatch, settings: Settings) -> None:
    for name, value in settings.as_env().items():
        monkeypatch.setenv(name, value)
