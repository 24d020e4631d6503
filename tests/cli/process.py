"""Run ``tierflow`` as the operator does: the installed console script (pyproject's
``[project.scripts]``), in a process of its own, its settings in the environment. What the
operator sees is the exit status and the bytes on stdout and stderr, so the tests read those."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tierflow.config import Settings

# Where pip puts the console script: beside the interpreter the tests run on.
TIERFLOW = Path(sys.executable).with_name("tierflow")


def tierflow_env(settings: Settings, **extra: str) -> dict[str, str]:
    """This process's environment with ``settings`` replacing every TIERFLOW_* in it."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("TIERFLOW_")}
    return {**base, **settings.as_env(), **extra}


def start(env: dict[str, str], *args: str, cwd: Path | None = None) -> subprocess.Popen[str]:
    """``tierflow ARGS`` started, not waited for: tests that run many start them all first."""
    return subprocess.Popen(
        [str(TIERFLOW), *args],
        env=env,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(process: subprocess.Popen[str], timeout_s: float = 300) -> subprocess.CompletedProcess:
    out, err = process.communicate(timeout=timeout_s)
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def tierflow(
    env: dict[str, str], *args: str, cwd: Path | None = None, timeout_s: float = 300
) -> subprocess.CompletedProcess:
    """``tierflow ARGS`` to its end."""
    return finish(start(env, *args, cwd=cwd), timeout_s)
