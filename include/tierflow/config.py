"""Where tierflow finds its log directories, metadata store and bucket.

Everything comes from environment variables so that the same code runs from the CLI, from an
Airflow worker and from a Spark driver. The defaults are the embedded ones: a SQLite file, a
local directory standing in for the bucket, and the demo log directory, all under the data dir.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

ENV_DATA_DIR = "TIERFLOW_DATA_DIR"
ENV_DB_URL = "TIERFLOW_DB_URL"
ENV_REMOTE_STORAGE = "TIERFLOW_REMOTE_STORAGE"
ENV_LOG_DIRS = "TIERFLOW_LOG_DIRS"
ENV_LEASE_TTL_S = "TIERFLOW_COPY_LEASE_TTL_S"

DEFAULT_LEASE_TTL_S = 900


def project_root() -> Path | None:
    """The checkout this package runs from, if it is one (an editable install)."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / "dags").is_dir() and (root / "include").is_dir() else None


def default_data_dir() -> Path:
    root = project_root()
    return root / "data" if root else Path.home() / ".tierflow"


@dataclass(frozen=True)
class Settings:
    data_dir: Path
    db_url: str
    remote_storage: str
    log_dirs: tuple[Path, ...]
    copy_lease_ttl_s: int = DEFAULT_LEASE_TTL_S

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        data_dir = Path(env.get(ENV_DATA_DIR) or default_data_dir()).resolve()
        db_url = env.get(ENV_DB_URL) or f"sqlite:///{data_dir / 'tierflow.db'}"
        remote = env.get(ENV_REMOTE_STORAGE) or str(data_dir / "bucket")
        raw_dirs = env.get(ENV_LOG_DIRS)
        log_dirs = (
            tuple(Path(p).resolve() for p in raw_dirs.split(os.pathsep) if p)
            if raw_dirs
            else (data_dir / "kafka-logs",)
        )
        ttl = int(env.get(ENV_LEASE_TTL_S) or DEFAULT_LEASE_TTL_S)
        return cls(data_dir, db_url, remote, log_dirs, ttl)

    @classmethod
    def embedded(cls, base: Path) -> Settings:
        """The embedded defaults, all under one directory: SQLite, a local bucket, one log dir."""
        base = Path(base).resolve()
        return cls(
            data_dir=base,
            db_url=f"sqlite:///{base / 'tierflow.db'}",
            remote_storage=str(base / "bucket"),
            log_dirs=(base / "kafka-logs",),
        )

    def as_env(self) -> dict[str, str]:
        """The same settings as environment variables, for a subprocess."""
        return {
            ENV_DATA_DIR: str(self.data_dir),
            ENV_DB_URL: self.db_url,
            ENV_REMOTE_STORAGE: self.remote_storage,
            ENV_LOG_DIRS: os.pathsep.join(str(p) for p in self.log_dirs),
            ENV_LEASE_TTL_S: str(self.copy_lease_ttl_s),
        }
