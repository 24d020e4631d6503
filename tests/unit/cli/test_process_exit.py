"""The ``tierflow`` process (``cli.run``: the console script, ``python -m tierflow.cli``) freezes
its objects before the interpreter's shutdown, whose last cyclic collections then skip them:
they took 0.13 s of every ``tierflow copy`` or ``status`` and about 2 s of an ``airflow
test-dag`` run. The exit code, output and atexit handlers are main's, as before."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support.tiered import build_tiered
from tierflow.cli import main

# Run as the console script does, with an atexit handler that reports the frozen objects.
PROBE = """\
import atexit, gc, sys
atexit.register(lambda: print(f"frozen at exit: {gc.get_freeze_count()}", file=sys.stderr))
sys.argv = ["tierflow", *sys.argv[1:]]
from tierflow.cli import run
run()
"""


def tierflow_process(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, text=True, check=False
    )


def frozen_at_exit(done: subprocess.CompletedProcess[str]) -> int:
    (line,) = [ln for ln in done.stderr.splitlines() if ln.startswith("frozen at exit: ")]
    return int(line.rsplit(" ", 1)[1])


def test_a_command_that_succeeds_exits_0_with_its_objects_frozen(tmp_path: Path) -> None:
    t = build_tiered(tmp_path)
    segment = t.log("orders", 0).segments()[0].log_path

    done = tierflow_process("dump-segment", str(segment))

    assert done.returncode == 0, done.stderr
    assert "baseOffset: 0" in done.stdout
    assert frozen_at_exit(done) > 10_000  # every module, class and function loaded


def test_a_failing_command_keeps_mains_exit_code_and_line(tmp_path: Path) -> None:
    missing = tmp_path / "00000000000000000000.log"
    expected = main(["dump-segment", str(missing)])

    done = tierflow_process("dump-segment", str(missing))

    assert expected != 0 and done.returncode == expected
    assert f"tierflow: error: {missing}: no such file" in done.stderr
    assert frozen_at_exit(done) > 10_000
