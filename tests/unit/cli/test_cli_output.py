"""What the CLI prints when stdout is a pipe or a file: every byte of a key recoverable, lines
never wrapped nor cut, times readable. (capsys is not a terminal, like a pipe.)"""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pytest

from tests.support.settings_env import use_settings
from tests.support.tiered import Tiered
from tests.unit.kafka.log_builders import BASE_TS, write
from tierflow.cli import main
from tierflow.kafka.batch_builder import Record, build_batch
from tierflow.read.dump_format import escape, unescape
from tierflow.units import iso_utc

# Bytes rich or a terminal would drop or act on, a backslash that looks like an escape,
# text that looks like rich markup or an emoji code, and bytes that are not UTF-8.
KEYS = [
    b"\x00\x00\x01\x0b",
    b"\x07\x08\x0b\x0c\r\n\t\x1b[31m\x7f",
    b"back\\slash \\x41 \\u0041",
    b"[red]not markup[/red] :smile:",
    "caf\u00e9 \u0085 \u2028 \u00a0".encode(),
    b"\xff\xfe\xc3(\xed\xa0\x80",
    b"  spaces  ",
]


@pytest.mark.parametrize("data", [*KEYS, pytest.param(bytes(range(256)), id="every-byte")])
def test_escape_round_trips_and_prints_no_control_character(data: bytes) -> None:
    text = escape(data)
    assert unescape(text) == data
    assert not re.search(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]", text)


def test_valid_utf8_prints_as_itself() -> None:
    assert escape("key-1 ünïcødé 🙂".encode()) == "key-1 ünïcødé 🙂"


@pytest.fixture
def keyed_segment(tmp_path: Path) -> Path:
    """One batch of a record per key of KEYS, each value the key after a ``v``."""
    records = [Record(key, b"v" + key, BASE_TS + i) for i, key in enumerate(KEYS)]
    return write(
        tmp_path / "00000000000000000000.log", build_batch(records, base_offset=0, leader_epoch=0)
    )


def test_print_records_keys_and_payloads_round_trip(
    keyed_segment: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    segment = keyed_segment
    capsys.readouterr()
    assert main(["dump-segment", "--print-records", str(segment)]) == 0
    out = capsys.readouterr().out
    lines = [line for line in out.split("\n") if line.startswith("| offset: ")]
    assert len(lines) == len(KEYS)
    for line, key in zip(lines, KEYS, strict=True):
        key_text, _, payload_text = line.partition(" key: ")[2].partition(" payload: ")
        assert unescape(key_text) == key
        assert unescape(payload_text) == b"v" + key
    assert "keySize: 4 " in lines[0] and "key: \\x00\\x00\\x01\\x0b payload:" in lines[0]


def test_a_long_path_prints_whole_on_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    deep = tmp_path.joinpath(*[f"a-rather-long-directory-name-{i}" for i in range(8)])
    deep.mkdir(parents=True)
    monkeypatch.setenv("TIERFLOW_DB_URL", f"sqlite:///{deep}/metadata.db")
    capsys.readouterr()
    assert main(["db", "upgrade"]) == 0
    out = capsys.readouterr().out
    assert f"schema is at the latest revision: sqlite:///{deep}/metadata.db\n" in out


def test_events_print_whole_rows_with_utc_times(
    tiered: Tiered, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    use_settings(monkeypatch, tiered.settings)
    events = tiered.store.events()[-6:]
    capsys.readouterr()
    assert main(["events", "--limit", "6"]) == 0
    out = capsys.readouterr().out
    assert "…" not in out and "time (UTC)" in out
    assert any(e.to_state == "COPY_SEGMENT_FINISHED" for e in events)
    for event in events:
        [row] = [line for line in out.splitlines() if re.match(rf"\W*{event.id}\b", line)]
        assert iso_utc(event.event_timestamp_ms) in row
        assert event.to_state in row and event.actor in row
        assert (event.segment_id or "") in row


def test_iso_utc_keeps_the_milliseconds() -> None:
    assert iso_utc(1_795_576_365_123) == "2026-11-25T03:12:45.123Z"
    assert iso_utc(1_795_576_365_001) == "2026-11-25T03:12:45.001Z"


def test_dump_segment_json_carries_every_key_and_payload_byte(
    keyed_segment: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    segment = keyed_segment
    capsys.readouterr()
    assert main(["dump-segment", "--print-records", "--json", str(segment)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["source"], report["log_start_offset"]) == (str(segment), 0)
    (batch,) = report["batches"]
    assert (batch["baseOffset"], batch["count"], batch["isvalid"]) == (0, len(KEYS), True)
    keys = [base64.b64decode(r["key"]) for r in batch["records"]]
    payloads = [base64.b64decode(r["payload"]) for r in batch["records"]]
    assert keys == KEYS and payloads == [b"v" + key for key in KEYS]
    assert main(["dump-segment", "--json", str(segment)]) == 0
    assert "records" not in json.loads(capsys.readouterr().out)["batches"][0]
