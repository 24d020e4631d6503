"""Run ``tierflow`` as an operator does: its own process, settings in the environment.

A subprocess, not ``cli.main`` in-process: what matters is everything the operator sees,
including a Python traceback when an error escapes the command.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass

from tests.security.needles import Secret
from tests.security.scan import Finding, find_secrets, text


@dataclass(frozen=True)
class CliRun:
    returncode: int
    output: str  # stdout and stderr

    def leaks(self, secrets: list[Secret]) -> list[Finding]:
        return find_secrets([text("tierflow output", self.output)], secrets)


def tierflow(env: Mapping[str, str], *args: str) -> CliRun:
    """``tierflow ARGS`` with the TIERFLOW_* of ``env`` replacing any of the test process."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("TIERFLOW_")}
    done = subprocess.run(
        [sys.executable, "-m", "tierflow.cli", *args],
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return CliRun(done.returncode, done.stdout + done.stderr)
