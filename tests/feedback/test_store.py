"""The turns store: turns numbered per session, rated by trace id or by session and turn, listed newest first with
filters, bounded by age and count, shared by processes, and nothing committed lost when a writer is killed."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from rag_core.errors import TurnNotFound
from rag_core.feedback import Lookup, TurnRecord, TurnStore, parse_rating

ROOT = Path(__file__).resolve().parents[2]


def record(session: str = "s1", question: str = "q", kb: str = "biz", trace: str = "", **kw: object) -> TurnRecord:
    return TurnRecord(session, question, f"answer to {question}", (kb,),
                      (Lookup(question, {"retrieve_k": 20, "return_n": 5}, ("a.md#chunk-0",)),), ("a.md#chunk-0",),
                      ("a.md#chunk-0",), "test-chat", "model", 0.5, trace or os.urandom(16).hex(), **kw)  # type: ignore[arg-type]


@pytest.fixture(params=["sqlite", "postgresql"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a turns store is kept: the data folder's file, or a database on the tests' PostgreSQL."""
    if request.param == "sqlite":
        return str(tmp_path / "turns.db")
    return request.getfixturevalue("postgres_db")


def test_turns_are_numbered_per_session_rated_and_listed(where: str) -> None:
    store = TurnStore(where)
    a0, a1 = store.add(record("a", "one", user_name="ana")), store.add(record("a", "two", user_name="ana"))
    b0 = store.add(record("b", "three", "ops", user_name="local"))
    assert (a0.turn_index, a1.turn_index, b0.turn_index) == (0, 1, 0)
    down = store.rate(-1, "  wrong runbook ", trace_id=a1.trace_id)
    assert (down.rating, down.comment, down.question) == (-1, "wrong runbook", "two")
    assert store.rate(1, session_id="b", turn_index=0).rating == 1
    # a later rating replaces the earlier one; its comment stays unless one is given ("" removes it, issue 34)
    assert store.rate(-1, trace_id=a1.trace_id.upper()).comment == "wrong runbook"
    assert store.rate(-1, "", trace_id=a1.trace_id).comment == ""
    assert [t.question for t in store.find()] == ["three", "two", "one"]
    assert [t.question for t in store.find(rating=-1)] == ["two"]
    assert [t.question for t in store.find(rated=True)] == ["three", "two"]
    assert [t.question for t in store.find(kb="ops")] == ["three"]
    assert [(t.question, t.user_name) for t in store.find(user="ana")] == [("two", "ana"), ("one", "ana")]
    assert store.find(user="bob") == [] and store.get(trace_id=b0.trace_id).to_dict()["user"] == "local"
    today = a0.created_at[:10]
    assert len(store.find(since=today, until=today)) == 3 and store.find(until="2000-01-01") == []
    got = store.get(trace_id=a0.trace_id)
    assert got.lookups[0].params["retrieve_k"] == 20 and got.to_dict()["rating"] is None
    with pytest.raises(TurnNotFound, match="no recorded turn 7"):
        store.rate(1, session_id="a", turn_index=7)
    with pytest.raises(TurnNotFound, match="trace id"):
        store.get(trace_id="0" * 32)


def test_ratings_parse_from_words_numbers_and_thumbs() -> None:
    assert [parse_rating(v) for v in ("up", "DOWN", "👍", "👎", 1, -1, "-1")] == [1, -1, 1, -1, 1, -1, -1]
    assert [parse_rating(v) for v in ("meh", 0, 2, True, None)] == [None] * 5


def test_retention_by_age_and_count(where: str) -> None:
    store = TurnStore(where, retention_days=30, max_turns=3)
    store.add(replace(record(question="ancient"), created_at="2001-01-01T00:00:00.000+00:00"))
    for n in range(4):
        store.add(record(question=f"q{n}"))
    assert [t.question for t in store.find()] == ["q3", "q2", "q1"]


def test_the_retention_settings_bound_the_data_folders_store(tmp_path: Path) -> None:
    from rag_core.bootstrap import build_turn_store
    from rag_core.config import load_settings

    settings = load_settings(tmp_path, overrides={"feedback.max-turns": 2, "feedback.retention-days": 30}, env={})
    store = build_turn_store(settings)
    store.add(replace(record(question="ancient"), created_at="2001-01-01T00:00:00.000+00:00"))
    for n in range(3):
        store.add(record(question=f"q{n}"))
    assert [t.question for t in store.find()] == ["q2", "q1"]
    assert [t.question for t in build_turn_store(load_settings(tmp_path, env={})).find()] == ["q2", "q1"]


def test_with_a_database_url_the_turns_live_in_postgresql(tmp_path: Path, postgres_db: str) -> None:
    from rag_core.bootstrap import build_turn_store
    from rag_core.config import load_settings

    store = build_turn_store(load_settings(tmp_path, env={"RAG_DATABASE_URL": postgres_db}))
    assert store.where.startswith("postgresql://") and store.path is None
    added = store.add(record(question="shared"))
    store.close()
    assert not (tmp_path / "turns.db").exists()
    again = build_turn_store(load_settings(tmp_path, env={"RAG_DATABASE_URL": postgres_db}))
    assert [t.question for t in again.find()] == ["shared"] and again.get(trace_id=added.trace_id).id == added.id


WRITER = textwrap.dedent("""
    import sys
    from rag_core.feedback import TurnRecord, TurnStore
    store = TurnStore(sys.argv[1])
    n = 0
    while True:
        store.add(TurnRecord("killed", f"question {n}", "x" * 20000, ("biz",), trace_id=f"{n:032x}"))
        n += 1
        print(n, flush=True)
""")


def test_a_writer_killed_mid_write_loses_nothing_committed_and_others_write_meanwhile(where: str) -> None:
    other = TurnStore(where)
    writer = subprocess.Popen([sys.executable, "-c", WRITER, where], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert writer.stdout is not None
        committed = 0
        while committed < 40:
            committed = int(writer.stdout.readline())
            if committed == 20:
                other.add(record("another-process", "meanwhile"))  # a second writer while the first writes
        writer.send_signal(signal.SIGKILL)  # most likely in the middle of its next write
        writer.wait(timeout=10)
    finally:
        if writer.poll() is None:
            writer.kill()
    kept = other.find(limit=10_000)
    assert len([t for t in kept if t.session_id == "killed"]) >= committed
    assert [t.question for t in kept if t.session_id == "another-process"] == ["meanwhile"]
    assert [t.turn_index for t in reversed(kept) if t.session_id == "killed"][:committed] == list(range(committed))
    if "://" not in where:
        with sqlite3.connect(where) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
            assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    after = other.add(record("killed", "after"))  # the store goes on, numbering after what was kept
    assert after.turn_index == len([t for t in kept if t.session_id == "killed"])


def test_two_processes_adding_to_one_session_at_once_number_its_turns_in_order(where: str) -> None:
    adder = textwrap.dedent("""
        import sys
        from rag_core.feedback import TurnRecord, TurnStore
        store = TurnStore(sys.argv[1])
        for n in range(15):
            store.add(TurnRecord("shared", f"{sys.argv[2]} {n}", "answer", ("biz",), trace_id=f"{sys.argv[2]}{n:030x}"))
    """)
    TurnStore(where).count()  # the schema made once, before the race
    runs = [subprocess.Popen([sys.executable, "-c", adder, where, name], cwd=ROOT, stderr=subprocess.PIPE, text=True)
            for name in ("aa", "bb")]
    errors = [run.communicate(timeout=300)[1] for run in runs]
    assert [run.returncode for run in runs] == [0, 0], errors
    kept = TurnStore(where).find(limit=100)
    assert sorted(t.turn_index for t in kept) == list(range(30))


# The turns table as releases before the database layer (rag_core/db) made it in data/turns.db.
OLD_SCHEMA = """
CREATE TABLE turns (
    id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, turn_index INTEGER NOT NULL,
    trace_id TEXT NOT NULL DEFAULT '', created_at TEXT NOT NULL, question TEXT NOT NULL, answer TEXT NOT NULL,
    knowledge_bases TEXT NOT NULL DEFAULT '[]', lookups TEXT NOT NULL DEFAULT '[]',
    evidence_keys TEXT NOT NULL DEFAULT '[]', citations TEXT NOT NULL DEFAULT '[]', model TEXT NOT NULL DEFAULT '',
    mode TEXT NOT NULL DEFAULT '', seconds REAL NOT NULL DEFAULT 0, error TEXT, rating INTEGER,
    comment TEXT NOT NULL DEFAULT '', rated_at TEXT, UNIQUE (session_id, turn_index)
);
CREATE INDEX turns_trace ON turns (trace_id);
CREATE INDEX turns_created ON turns (created_at);
CREATE INDEX turns_rating ON turns (rating, created_at);
INSERT INTO turns (session_id, turn_index, trace_id, created_at, question, answer, knowledge_bases)
VALUES ('old', 0, 'ab12', '2026-11-30T10:00:00.000+00:00', 'kept?', 'yes', '["biz"]');
"""


def test_a_turns_file_of_an_earlier_release_is_kept_with_its_turns(tmp_path: Path) -> None:
    path = tmp_path / "turns.db"
    with sqlite3.connect(path) as conn:
        conn.executescript(OLD_SCHEMA)
    store = TurnStore(path, retention_days=0)
    assert [(t.question, t.turn_index, t.knowledge_bases, t.user_name) for t in store.find(kb="biz")] == [
        ("kept?", 0, ("biz",), "")]  # asked before turns named who asked
    assert store.add(record("old", "next")).turn_index == 1
    assert store.rate(1, trace_id="AB12").rating == 1 and store.count() == 2
