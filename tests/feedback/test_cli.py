"""`python -m rag_core feedback list|rate` over the data folder's turns store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_core.cli import main
from rag_core.feedback import FILE_NAME, TurnStore
from tests.feedback.test_store import record


def test_list_and_rate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = TurnStore(tmp_path / FILE_NAME)
    kept = store.add(record("s", "disk full?", "ops"))
    store.add(record("s", "cpu high?", "biz", user_name="ana"))
    assert main(["--data-dir", str(tmp_path), "feedback", "rate", kept.trace_id, "down", "--comment", "stale"]) == 0
    capsys.readouterr()
    assert main(["--data-dir", str(tmp_path), "feedback", "list", "--rating", "down", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(t["question"], t["rating"], t["comment"]) for t in listed] == [("disk full?", "down", "stale")]
    assert main(["--data-dir", str(tmp_path), "--kb", "biz", "feedback", "list"]) == 0
    out = capsys.readouterr().out
    assert "cpu high?" in out and "disk full?" not in out and "ana" in out.splitlines()[2]
    assert main(["--data-dir", str(tmp_path), "feedback", "list", "--user", "ana", "--json"]) == 0
    assert [(t["question"], t["user"]) for t in json.loads(capsys.readouterr().out)] == [("cpu high?", "ana")]
    assert main(["--data-dir", str(tmp_path), "feedback", "rate", "f" * 32, "up"]) == 2
    assert "No recorded turn has trace id" in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "says"), [
    (["rate", "", "down"], "Name the turn by its trace id"),
    (["rate", "  ", "up"], "Name the turn by its trace id"),
    (["list", "--since", "yesterday"], "since='yesterday' is not a date or a time: use ISO 8601"),
    (["list", "--until", "2026-13-45"], "until='2026-13-45' is not a date or a time"),
])
def test_a_turn_named_or_filtered_wrongly_is_one_clear_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                            argv: list[str], says: str) -> None:
    assert main(["--data-dir", str(tmp_path), "feedback", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert says in err and "\n" not in err and "unexpected" not in err
