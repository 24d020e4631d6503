"""Commands whose jobs run on the engine's processes here spawn those first (engine.spawned).

A fresh worker imports its job's modules and opens its storage, about 0.4 s, and a command's
own process spends 0.5-0.9 s importing the store and planning before it knows its jobs: spawned
first, the workers start on the cores the command leaves idle meanwhile, instead of after it.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

from tierflow.cli.spec import Handler


@dataclass(frozen=True)
class OnEarlyWorkers:
    """``work``, with the run's processes spawned before it, each importing ``modules``, when
    ``here(args)`` says its jobs run on this machine's processes (not Spark) and neither a dry
    run nor ``--workers 1`` keeps them in this process."""

    work: Handler  # a Deferred: the work's module is imported when the command runs
    modules: tuple[str, ...]
    here: Callable[[argparse.Namespace], bool]

    def __call__(self, args: argparse.Namespace) -> int:
        if args.dry_run or args.workers == 1 or not self.here(args):
            return self.work(args)
        from tierflow.config import Settings
        from tierflow.engine.worker import early_workers

        with early_workers(Settings.from_env(), args.workers, self.modules):
            return self.work(args)
