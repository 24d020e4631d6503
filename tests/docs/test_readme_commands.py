"""Every command README.md shows runs in a test, as the README writes it (issue 16).

The commands are parsed from the README (tests/docs/readme.py), so one added later is found:
``test_every_readme_command_is_run_or_listed`` fails for a command that nothing here runs and
that ``NOT_RUN_HERE`` does not list. The README's own text is what runs (``shlex``-split, or
in bash where it uses shell variables); where it shows a placeholder or an example path, the
substitution is spelled out below, next to the command it changes.
"""

from __future__ import annotations

import ast
import json
import re
import shlex
import sqlite3
from contextlib import closing
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
import yaml

from tests.docs.readme import (
    Block,
    all_commands,
    block_commands,
    block_under,
    inline_commands,
    key_lines,
    prompted_blocks,
    readme_text,
)
from tests.docs.sandbox import (
    ORDERS,
    PAYMENTS,
    PROJECT,
    Ran,
    enter_sandbox,
    generate_broker,
    need_program,
    run_cli,
    run_shell,
    shell_env,
    write_batches,
    writes,
)

CLI_HEADING = "Using the CLI"
DISKLESS_HEADING = "Diskless topics (KIP-1163)"
BROKERS_HEADING = "Clusters: many brokers, leaders, topics"


@dataclass(frozen=True)
class Elsewhere:
    """An existing test runs the command; its file holds ``words``, the command's own."""

    test: str  # path::test_name
    words: tuple[str, ...]


@dataclass(frozen=True)
class Reason:
    """Why the command cannot run inside the test suite."""

    why: str


# The README commands this module does not run, each with the test that does, or why not.
NOT_RUN_HERE: dict[str, Elsewhere | Reason] = {
    "make test": Reason("it is the whole suite, this test included (about 40 minutes)"),
    "make check": Reason(
        "ruff and tests/unit (2-3 min): make test runs tests/unit, and here `make lint`"
    ),
    "make format": Reason("it rewrites the checkout's files; `make lint` here checks the same"),
    "make fuzz": Reason("tests/fuzz at 10,000 cases a property (19 min); make test runs 300"),
    "make chaos": Reason("the full harness (53 min); tests/chaos/test_chaos.py runs a sample"),
    "python -m tests.chaos": Reason("what `make chaos` runs; see there"),
    "make test-servers": Reason("make test runs it first; it installs packages as root"),
    "make kafka": Elsewhere(
        "tests/kafka/test_make_kafka.py::test_make_kafka_starts_a_broker_and_ctrl_c_stops_it",
        ("make", "kafka"),
    ),
    "make airflow": Elsewhere(
        "tests/e2e/test_airflow_e2e.py::test_servers_listen_on_loopback_only_and_stop_cleanly",
        ("LocalAirflow", "wait_ready"),
    ),
    "airflow backfill create --dag-id retention_expiry --from-date … --to-date … "
    "--max-active-runs 1": Elsewhere(
        "tests/e2e/test_airflow_e2e.py::test_three_night_backfill_of_retention_expiry",
        ("/api/v2/backfills", '"max_active_runs": 1', "retention_expiry"),
    ),
    "airflow celery worker --queues kafka-broker-1": Reason(
        "apache-airflow-providers-celery and a Celery broker are not installed"
    ),
    "airflow edge worker --queues kafka-broker-1": Reason(
        "apache-airflow-providers-edge3 is not installed"
    ),
    "pip install -r requirements.txt && pip install --no-deps -e .": Reason(
        "it installs into the running environment; make runs the same two into .venv"
    ),
    "tierflow keys generate --dir keys --key-id k1": Elsewhere(
        "tests/unit/cli/test_readme_key_commands.py::test_the_readme_key_commands_run_as_written",
        ("tierflow keys", "README"),
    ),
    "tierflow keys add --keyring keys/keyring.json --key-id k2 --generate --activate": Elsewhere(
        "tests/unit/cli/test_readme_key_commands.py::test_the_readme_key_commands_run_as_written",
        ("tierflow keys", "README"),
    ),
    "tierflow rewrap-keys": Elsewhere(
        "tests/unit/cli/test_key_commands.py::test_rotation_and_rewrap_keys_end_to_end",
        ('run("rewrap-keys")',),
    ),
    ".venv/bin/tierflow compact --dry-run": Elsewhere(
        "tests/cli/test_compact_command.py::test_dry_run_then_run_then_nothing_left",
        ('main(["compact", "--dry-run"])', "as the README shows it"),
    ),
    "tierflow topics handover TOPIC --yes": Elsewhere(
        "tests/kafka/test_handover.py::test_the_broker_drops_its_local_copies_of_what_tierflow_tiered",
        ('"topics"', '"handover"', '"--yes"'),
    ),
    # The CLI block deletes its topic; these run beside a real broker instead.
    "tierflow topics register TOPIC --config remote.storage.enable=true": Elsewhere(
        "tests/kafka/test_followed_topic.py::test_the_store_mirrors_the_brokers_finished_segments",
        ('"topics", "register"', "remote.storage.enable=true"),
    ),
    "tierflow topics handover TOPIC": Elsewhere(
        "tests/kafka/test_handover.py::test_the_broker_drops_its_local_copies_of_what_tierflow_tiered",
        ('"topics", "handover", TOPIC)', "as the README shows it: a dry run"),
    ),
    "tierflow topics follow TOPIC": Elsewhere(
        "tests/kafka/test_followed_topic.py::test_the_store_mirrors_the_brokers_finished_segments",
        ('"topics", "follow"',),
    ),
    "tierflow remote-log-metadata publish": Elsewhere(
        "tests/kafka/test_publish_remote_log_metadata.py::"
        "test_a_killed_publish_is_finished_by_the_next_run_neither_lost_nor_duplicated",
        ('"remote-log-metadata"', '"publish"'),
    ),
    "tierflow remote-log-metadata follow": Elsewhere(
        "tests/kafka/test_handover.py::"
        "test_tierflow_mirrors_what_the_broker_tiers_and_restores_both_writers_segments",
        ('"remote-log-metadata"', '"follow"'),
    ),
    "tierflow ... \\| head": Elsewhere(
        "tests/unit/cli/test_failure_matrix.py::test_reader_closing_the_pipe_ends_quietly",
        ("head", "BROKEN_PIPE"),
    ),
}

# Inline code that names a command in passing; the full command runs here or is listed above.
MENTIONS = (
    "tierflow fetch",
    "tierflow diskless register",
    "tierflow keys generate",
    "tierflow keys --keyring",
    "tierflow restore",
)

# Inline commands with placeholders, and what runs for them.
FILLED = {
    # `disable` is the CLI block's own `tierflow tiering disable orders --policy retain`.
    "tierflow tiering disable|enable": ("tierflow tiering enable orders",),
    "tierflow topics register TOPIC --config KEY=VALUE": (
        "tierflow topics register orders --config retention.ms=86400000",
    ),
    "tierflow delete-topic T --yes": ("tierflow delete-topic orders --yes",),
}
FILLED_DISKLESS = {
    # `--dry-run` is the diskless block's own `tierflow diskless merge --dry-run`.
    "tierflow diskless merge [--dry-run]": ("tierflow diskless merge",),
}

# Commands the README documents as dry runs by default: they must write nothing.
DRY_BY_DEFAULT = ("tierflow delete-topic orders", "tierflow reconcile")


@dataclass(frozen=True)
class Bug:
    """Why a README command fails today; ``workaround``, the form that works, runs after it
    so that the commands after it find the state the README intends."""

    why: str
    workaround: tuple[str, ...] | None = None


# README commands that fail as written because of a bug outside this module: each case is
# marked xfail(strict=True), so that the fix shows up as an XPASS to remove from here.
KNOWN_BUGS: dict[str, Bug] = {}
# README commands that must change the store or the bucket (the sandbox's records end on
# 2026-04-01, so the README's night of 2026-05-01 finds them past the 7-day retention.ms).
MUST_WRITE = ("tierflow copy", "tierflow retention --now 2026-05-01T02:00:00Z")

MAKE_DEMO, MAKE_LINT, JAVA_VERSION = "make demo", "make lint", "java -version"
APPLY_SETTINGS = "tierflow airflow apply-settings"
BENCHMARK = ".venv/bin/python benchmarks/"
# Each benchmark at a tiny size (its figures mean nothing then, but it runs end to end), or
# with --help where even a tiny run costs Spark's start-up (10-16 s) or a live Airflow.
QUICK_RUNS = {
    "tiering_throughput.py": "--help",
    "fetch_latency.py": "--segment-mib 4 --chunk-mib 1 --fetches 5",
    "retention_plan.py": "--topics 1 --partitions 2 --segments 10 --db {tmp}/plan.db",
    "copy_throughput.py": "--segment-mib 1 --segments 2",
    "active_segment.py": "--active-mib 4 --partitions 1",
    "diskless_commit.py": "--objects 2 --batches 10 --partitions 2 --no-postgres",
    "diskless_merge.py": "--help",
    "remote_compaction.py": "--help",
    "cluster_scale.py": "--help",
    "live_broker.py": "--help",
    "handover.py": "--help",
    "iceberg_export.py": "--gib 0.03125 --segment-mib 8",
    "scrub.py": "--gib 0.03125 --segment-mib 8 --rounds 1",
    # 32 MiB restored on Spark once, and a replica over 20 remote segments.
    "restore_throughput.py": ("--gib 0.03125 --segment-mib 16 --repeat 1 --rebuild-segments 20"),
    # A 128 MiB copy through tierflow copy's processes: no Spark, no Airflow.
    "copy_end_to_end.py": (
        "--gib 0.125 --kinds json --layouts plain --dag-paths --cli-paths processes"
    ),
}


def is_mention_or_template(command: str) -> bool:
    return command in MENTIONS or command in FILLED or command in FILLED_DISKLESS


def inline_cli_commands() -> list[str]:
    """Inline `tierflow ...` commands no block shows and nothing else handles: they run as
    written in the CLI block's sandbox, after the block."""
    handled = {*block_commands(), *NOT_RUN_HERE, APPLY_SETTINGS}
    return [
        c
        for c in dict.fromkeys(inline_commands())
        if c.startswith("tierflow ") and c not in handled and not is_mention_or_template(c)
    ]


def cli_steps() -> list[str]:
    filled = [command for commands in FILLED.values() for command in commands]
    return [*block_under(CLI_HEADING).commands(), *inline_cli_commands(), *filled]


def diskless_steps() -> list[str]:
    filled = [command for commands in FILLED_DISKLESS.values() for command in commands]
    return [*block_under(DISKLESS_HEADING).commands(), *filled]


def benchmark_commands() -> list[str]:
    return [c for c in dict.fromkeys(inline_commands()) if c.startswith(BENCHMARK)]


def covered() -> set[str]:
    """Every README command this module runs, names in passing, or lists in NOT_RUN_HERE."""
    sessions = [c for block in prompted_blocks() for c in block.commands()]
    runs_here = {MAKE_DEMO, MAKE_LINT, JAVA_VERSION, APPLY_SETTINGS}
    benchmarks = [c for c in benchmark_commands() if script_of(c) in QUICK_RUNS]
    brokers = block_under(BROKERS_HEADING).commands()
    listed = {*NOT_RUN_HERE, *MENTIONS, *FILLED, *FILLED_DISKLESS}
    return {*cli_steps(), *diskless_steps(), *sessions, *runs_here, *benchmarks, *brokers, *listed}


def script_of(command: str) -> str:
    return shlex.split(command)[1].removeprefix("benchmarks/")


# --- The inventory ------------------------------------------------------------------------


def test_every_readme_command_is_run_or_listed() -> None:
    missing = [c for c in all_commands() if c not in covered()]
    assert not missing, (
        f"README commands that no test runs: {missing}. Run them here (a block's session, "
        "FILLED for a placeholder, QUICK_RUNS for a benchmark) or list them in NOT_RUN_HERE."
    )


def test_every_listed_command_is_still_in_the_readme() -> None:
    listed = [*NOT_RUN_HERE, *MENTIONS, *FILLED, *FILLED_DISKLESS, *KNOWN_BUGS, *MUST_WRITE]
    listed += [*DRY_BY_DEFAULT]
    listed += [MAKE_DEMO, MAKE_LINT, JAVA_VERSION, APPLY_SETTINGS]
    stale = [c for c in listed if c not in all_commands()]
    assert not stale, f"listed here but gone from the README: {stale}"


def test_a_mention_names_a_command_that_is_covered() -> None:
    def within(words: list[str], command: str) -> bool:
        rest = iter(shlex.split(command))
        return all(word in rest for word in words)

    full = [c for c in covered() if c not in MENTIONS]
    for mention in MENTIONS:
        assert any(within(mention.split(), c) for c in full), mention


@pytest.mark.parametrize(
    "command", [c for c, e in NOT_RUN_HERE.items() if isinstance(e, Elsewhere)]
)
def test_the_test_named_for_a_command_exists_and_runs_it(command: str) -> None:
    entry = NOT_RUN_HERE[command]
    assert isinstance(entry, Elsewhere)
    path, name = entry.test.split("::")
    source = (PROJECT / path).read_text()
    defined = {n.name for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef)}
    assert name in defined, f"{path} has no {name}"
    assert all(word in source for word in entry.words), (path, entry.words)


def test_the_pip_line_is_what_make_installs_with() -> None:
    """Keeps the pip line's reason true: the Makefile's install step runs both commands."""
    (line,) = [c for c in NOT_RUN_HERE if c.startswith("pip install")]
    makefile = (PROJECT / "Makefile").read_text()
    for command in line.split(" && "):
        assert f"pip install $(PIP_QUIET) {command.removeprefix('pip install ')}" in makefile


def test_every_reason_is_one_short_line() -> None:
    for command, entry in NOT_RUN_HERE.items():
        if isinstance(entry, Reason):
            assert entry.why and "\n" not in entry.why and len(entry.why) <= 90, command


# --- The CLI and diskless blocks, in order, each in one sandbox -----------------------------

# The README's example log dir, and the sandbox's generated one that stands for it.
EXAMPLE_LOG_DIRS = "/var/lib/kafka/data"


def segment_id(argv: list[str]) -> str:
    """`<id>`: a real remote segment of the partition the command names, the first one that
    `tierflow metadata --topic T --json` lists for it."""
    topic = argv[argv.index("--topic") + 1]
    partition = int(argv[argv.index("--partition") + 1])
    listed = json.loads(run_cli(f"tierflow metadata --topic {topic} --json").out)
    (row,) = [p for p in listed if p["partition"] == partition]
    return row["segments"][0]["segment_id"]


PLACEHOLDERS = {"<id>": segment_id}


def filled(command: str) -> list[str]:
    argv = shlex.split(command)
    argv = [PLACEHOLDERS[word](argv) if word in PLACEHOLDERS else word for word in argv]
    unfilled = [word for word in argv if re.fullmatch(r"<[^>]+>|\.\.\.|…", word)]
    assert not unfilled, f"{command}: fill {unfilled} in PLACEHOLDERS"
    return argv


def apply_export(line: str, mp: pytest.MonkeyPatch, paths: dict[str, Path]) -> None:
    """A block's `export NAME=VALUE`, its example path replaced by the sandbox's."""
    name, value = shlex.split(line.removeprefix("export "))[0].split("=", 1)
    assert value in paths, f"{line}: say which sandbox path stands for {value!r}"
    mp.setenv(name, str(paths[value]))


def run_one(command: str, base: Path) -> Ran:
    before = writes(base)
    ran = run_cli(command, filled(command))
    ran = replace(ran, wrote=writes(base) != before)
    bug = KNOWN_BUGS.get(command)
    if bug and bug.workaround:  # then the form that works, for the commands after it
        fixed = run_cli(command, list(bug.workaround))
        assert fixed.code == 0, fixed
    return ran


def run_steps(
    steps: list[str], base: Path, mp: pytest.MonkeyPatch, paths: dict[str, Path]
) -> dict[str, Ran]:
    results: dict[str, Ran] = {}
    for step in steps:
        if step.startswith("export "):
            apply_export(step, mp, paths)
            continue
        failed = False
        for command in step.split(" && "):  # the second runs only when the first succeeded
            ran = Ran(command, (), None) if failed else run_one(command, base)
            results[command] = ran
            failed = failed or ran.code != 0
    return results


def cases(steps: list[str]) -> list[object]:
    commands = [c for s in steps if not s.startswith("export ") for c in s.split(" && ")]
    return [
        pytest.param(c, id=c, marks=[pytest.mark.xfail(strict=True, reason=KNOWN_BUGS[c].why)])
        if c in KNOWN_BUGS
        else pytest.param(c, id=c)
        for c in commands
    ]


def is_dry_run(command: str) -> bool:
    return "--dry-run" in shlex.split(command) or command in DRY_BY_DEFAULT


def check(ran: Ran, extra: dict[str, tuple[str, ...]]) -> None:
    """Exit 0; a dry run wrote nothing, MUST_WRITE wrote; ``extra`` is what must be printed."""
    assert ran.code == 0, f"{ran.command} (as {shlex.join(ran.argv)}): {ran.code}\n{ran.err}"
    if is_dry_run(ran.command):
        assert ran.wrote is False, f"the dry run {ran.command!r} changed the store or bucket"
    if ran.command in MUST_WRITE:
        assert ran.wrote is True, f"{ran.command!r} changed neither the store nor the bucket"
    for word in extra.get(ran.command, ()):
        assert word in ran.out, f"{ran.command}: {word!r} not printed"


@pytest.fixture(scope="module")
def cli_results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Ran]:
    """The whole session runs once; each command is then a test case of its own."""
    base = tmp_path_factory.mktemp("readme-cli")
    generate_broker(base / "kafka-logs", ORDERS)  # `orders`, the topic the block names
    with pytest.MonkeyPatch.context() as mp:
        enter_sandbox(mp, base)
        return run_steps(cli_steps(), base, mp, {EXAMPLE_LOG_DIRS: base / "kafka-logs"})


@pytest.fixture(scope="module")
def diskless_results(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[dict[str, Ran], list[str]]:
    base = tmp_path_factory.mktemp("readme-diskless")
    # `batches.log`, the README's "files of record batches", from the library's batch builder.
    keys = write_batches(base / "batches.log")
    with pytest.MonkeyPatch.context() as mp:
        enter_sandbox(mp, base)
        return run_steps(diskless_steps(), base, mp, {}), keys


@pytest.mark.parametrize("command", cases(cli_steps()))
def test_the_cli_block_runs_in_order(command: str, cli_results: dict[str, Ran]) -> None:
    fetch = "tierflow fetch --topic orders --partition 0 --offset 1200 --print-records"
    ran = cli_results[command]
    extra = {fetch: ("offset: 1200 ",)}
    if "<id>" in command:
        extra[command] = (ran.argv[-1],)  # the segment dumped is the one asked for
    check(ran, extra)


@pytest.mark.parametrize("command", cases(diskless_steps()))
def test_the_diskless_block_runs_in_order(
    command: str, diskless_results: tuple[dict[str, Ran], list[str]]
) -> None:
    results, keys = diskless_results
    fetch = "tierflow diskless fetch clicks --partition 0 --offset 0 --print-records"
    check(results[command], {fetch: tuple(keys)})  # every record produced reads back


# --- The prompted sessions, on the real samples in ../shared --------------------------------

ASSIGNMENT = re.compile(r"(export )?[A-Za-z_]\w*=")


def tokens(line: str) -> tuple[str, ...]:
    """A line's words, table borders dropped; a path as the absolute path it names (the README
    shows the relative path typed, the CLI prints where it leads)."""
    words = line.replace("│", " ").replace("┃", " ").split()
    return tuple(str((PROJECT / w).resolve()) if w.startswith(("../", "/")) else w for w in words)


def exported(lines: list[str], env: dict[str, str]) -> dict[str, str]:
    """The TIERFLOW_* settings ``lines`` (a session's `S=` and `export` lines) leave behind,
    as bash evaluates them in the checkout."""
    ran = run_shell("\n".join([*lines, "env -0"]), env)
    assert ran.code == 0, ran.err
    found = dict(item.split("=", 1) for item in ran.out.split("\0") if "=" in item)
    return {name: value for name, value in found.items() if name.startswith("TIERFLOW_")}


@pytest.mark.parametrize("block", [pytest.param(b, id=b.commands()[-1]) for b in prompted_blocks()])
def test_a_readme_session_runs_on_the_real_samples(
    block: Block, kafka_samples: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each command as written, from the checkout, after the session's shell lines (run by
    bash); it exits 0 and prints the rows and summary lines the README shows under it."""
    for sample in re.findall(r"\.\./shared/[\w./-]+", "\n".join(block.commands())):
        if not (PROJECT / sample).exists():
            pytest.skip(f"{sample} is not present beside the checkout")
    enter_sandbox(monkeypatch, tmp_path)
    monkeypatch.chdir(PROJECT)
    prelude: list[str] = []
    for command, comment, shown in block.session():
        if ASSIGNMENT.match(command):
            prelude.append(command)
            continue
        for name, value in exported(prelude, shell_env(tmp_path)).items():
            monkeypatch.setenv(name, value)
        ran = run_cli(command)
        printed = ran.out + ran.err
        assert ran.code == 0, f"{command}: exit {ran.code}\n{printed}"
        lines = {tokens(line) for line in printed.splitlines()}
        for line in key_lines(shown):
            assert tokens(line) in lines, f"{command}: the README shows {line!r}\n{printed}"
        claim = re.match(r"\d+ \w+", comment)  # `# 4 created, ...`: the summary says so
        assert claim is None or claim.group() in printed, f"{command}: not {comment!r}"


def test_the_brokers_line_names_two_brokers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (line,) = block_under(BROKERS_HEADING).commands()
    enter_sandbox(monkeypatch, tmp_path)
    # The README's /data/b1/a, /data/b1/b and /data/b2/a, under the sandbox: broker 1 holds
    # orders in one log dir and payments in the other, broker 2 a replica of both.
    generate_broker(tmp_path / "data/b1/a", ORDERS, broker_id=1)
    generate_broker(tmp_path / "data/b1/b", PAYMENTS, broker_id=1)
    generate_broker(tmp_path / "data/b2/a", ORDERS, PAYMENTS, broker_id=2)
    name, value = shlex.split(line.removeprefix("export "))[0].split("=", 1)
    monkeypatch.setenv(name, value.replace("/data/", f"{tmp_path}/data/"))
    ran = run_cli("tierflow cluster describe")
    assert ran.code == 0, ran.err
    for log_dir in re.findall(r"/data/b\d/\w", value):
        assert f"{tmp_path}{log_dir}" in ran.out, log_dir


# --- make, java, Airflow and the benchmarks ----------------------------------------------------


def java_major() -> int:
    """`java -version`, as the README has the reader check it: the major version it shows."""
    need_program("java")
    ran = run_shell(JAVA_VERSION, shell_env())
    found = re.search(r'version "(\d+)', ran.err + ran.out)
    assert ran.code == 0 and found, ran.err
    return int(found.group(1))


def need_installed(stamp: str) -> None:
    """Skip when make would first install packages (an out-of-date .venv): not in a test."""
    need_program("make")
    if run_shell(f"make -q {stamp}", shell_env()).code != 0:
        pytest.skip(f"{stamp} is out of date: make would install packages first")


def test_java_version_as_written() -> None:
    assert java_major() > 0


def test_make_lint_as_written() -> None:
    need_installed(".venv/.dev-installed")
    ran = run_shell(MAKE_LINT, shell_env())
    assert ran.code == 0, ran.out + ran.err


@pytest.mark.slow
@pytest.mark.airflow
def test_make_demo_as_written(tmp_path: Path) -> None:
    """The whole demo (Spark through Airflow's dag.test: the longest test here), into the
    sandbox's TIERFLOW_DATA_DIR; then every path "What `make demo` does" names is there."""
    if java_major() < 17:
        pytest.skip("no Java 17: the Makefile would install it (as root) or stop")
    need_installed(".venv/.runtime-installed")
    ran = run_shell(MAKE_DEMO, shell_env(tmp_path))
    assert ran.code == 0, ran.out[-3000:] + ran.err[-3000:]
    section = readme_text().split("### What `make demo` does", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`data/(demo/[^`]+)`", section))
    assert named, "the README names no path under data/demo any more"
    missing = [p for p in named if not (tmp_path / "data" / p).exists()]
    assert not missing, missing


def test_apply_settings_creates_the_pools_and_connections(tmp_path: Path) -> None:
    env = {**shell_env(tmp_path), "AIRFLOW_HOME": str(tmp_path / "airflow")}
    env.pop("AIRFLOW__DATABASE__SQL_ALCHEMY_CONN", None)
    # The deployment's Airflow database exists before its settings are applied.
    migrated = run_shell("airflow db migrate", env)
    assert migrated.code == 0, migrated.err
    ran = run_shell(APPLY_SETTINGS, env)
    assert ran.code == 0, ran.out + ran.err
    wanted = yaml.safe_load((PROJECT / "airflow_settings.yaml").read_text())["airflow"]
    with closing(sqlite3.connect(tmp_path / "airflow" / "airflow.db")) as db:
        pools = {row[0] for row in db.execute("SELECT pool FROM slot_pool")}
        connections = {row[0] for row in db.execute("SELECT conn_id FROM connection")}
    assert {p["pool_name"] for p in wanted["pools"]} <= pools
    assert {c["conn_id"] for c in wanted["connections"]} <= connections


@pytest.mark.parametrize(
    "command", benchmark_commands(), ids=lambda command: command.removeprefix(BENCHMARK)
)
def test_a_benchmark_runs_as_written(command: str, tmp_path: Path) -> None:
    """The README's command, then its QUICK_RUNS flags (the last value of a flag wins)."""
    quick = QUICK_RUNS.get(script_of(command))
    assert quick is not None, f"{command}: give it a quick mode in QUICK_RUNS"
    if not (PROJECT / ".venv/bin/python").exists():
        pytest.skip("the checkout has no .venv (make install creates it)")
    ran = run_shell(f"{command} {quick.format(tmp=tmp_path)}", shell_env(tmp_path))
    assert ran.code == 0, ran.out[-3000:] + ran.err[-3000:]
