"""The README's list of pools is the one airflow_settings.yaml creates: a pool added to the
file and not to the README (or the other way round) fails here."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def test_the_readme_names_every_pool_airflow_settings_creates() -> None:
    settings = yaml.safe_load((ROOT / "airflow_settings.yaml").read_text())
    created = {pool["pool_name"] for pool in settings["airflow"]["pools"]}
    (row,) = [
        line
        for line in (ROOT / "README.md").read_text().splitlines()
        if line.startswith("| `airflow_settings.yaml` |")
    ]
    assert set(re.findall(r"`(tierflow_\w+)`", row)) == created
