"""Chat sessions kept in the shared state's database (service.sessions.SharedSessionStore), as the workers of
`serve --workers N` keep them: two stores on one database (two workers) see each other's turns, turns written at
once by both are all kept, the window and the number of sessions stay bounded; on SQLite and PostgreSQL."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from rag_core.agent.session import Turn
from rag_core.db.engine import engine
from rag_core.service.sessions import SessionStore, SharedSessionStore, turn_from_json, turn_json


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'team.db'}"
    return str(request.getfixturevalue("postgres_db"))


def two(url: str, *, max_sessions: int = 100, pairs: int = 6) -> tuple[SharedSessionStore, SharedSessionStore]:
    """Two workers' stores: an engine each, one database."""
    return (SharedSessionStore(engine(url), max_sessions, pairs), SharedSessionStore(engine(url), max_sessions, pairs))


def test_a_turn_added_by_one_worker_is_in_the_other_workers_session(url: str) -> None:
    a, b = two(url)
    assert a.get("ann", "s1") is None
    session = a.get_or_create("ann", "s1")
    assert session.id == "s1" and session.snapshot() == []
    session.add(Turn("How do I free disk space?", "Delete old logs [runbooks/disk.md#chunk-1].",
                     ("runbooks/disk.md#chunk-1",), mode="offline"))
    there = b.get("ann", "s1")
    assert there is not None
    (turn,) = there.snapshot()
    assert turn.question == "How do I free disk space?" and turn.citations == ("runbooks/disk.md#chunk-1",)
    assert there.history_messages(6)[0] == {"role": "user", "content": "How do I free disk space?"}
    there.add(Turn("Which command shows it?", "df -h."))
    assert [t.question for t in a.get_or_create("ann", "s1").snapshot()] == ["How do I free disk space?",
                                                                             "Which command shows it?"]
    assert b.get("bob", "s1") is None  # a session belongs to its user
    a.get_or_create("ann", "s1").clear()
    assert b.get("ann", "s1").snapshot() == []  # type: ignore[union-attr]
    assert len(a) == len(b) == 1
    new = b.get_or_create("ann", None)
    assert len(new.id) == 32 and a.get("ann", new.id) is not None


def test_turns_written_at_once_by_two_workers_are_all_kept_within_the_window(url: str) -> None:
    a, b = two(url, pairs=50)
    a.get_or_create("ann", "busy")

    def add(n: int) -> None:
        store = (a, b)[n % 2]
        session = store.get_or_create("ann", "busy")  # each its own view, as each request has
        session.add(Turn(f"q{n}", f"a{n}"))

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(add, range(40)))
    kept = a.get("ann", "busy").snapshot()  # type: ignore[union-attr]
    assert sorted(t.question for t in kept) == sorted(f"q{n}" for n in range(40))

    short = SharedSessionStore(engine(url), 100, 2)  # chat.history-pairs = 2: the last two answered turns
    window = short.get_or_create("ann", "short")
    for n in range(5):
        window.add(Turn(f"q{n}", f"a{n}" if n != 3 else ""))
    assert [t.question for t in short.get("ann", "short").snapshot()] == ["q2", "q4"]  # type: ignore[union-attr]


def test_beyond_max_sessions_the_least_recently_updated_goes(url: str) -> None:
    a, b = two(url, max_sessions=3)
    for n in range(3):
        a.get_or_create("ann", f"s{n}").add(Turn(f"q{n}", f"a{n}"))
    b.get("ann", "s0").add(Turn("again", "yes"))  # type: ignore[union-attr]  # s1 is now the oldest
    b.get_or_create("ann", "s3")
    assert len(a) == 3 and a.get("ann", "s1") is None
    assert {sid for sid in ("s0", "s2", "s3") if a.get("ann", sid) is not None} == {"s0", "s2", "s3"}


def test_a_turn_survives_its_json_and_the_in_memory_store_behaves_alike() -> None:
    turn = Turn("q", "a", ("k#chunk-1",), "offline", "answer")
    assert turn_from_json(turn_json(turn)) == turn
    memory = SessionStore(10, 6)
    memory.get_or_create("ann", "s1").add(turn)
    assert memory.get("ann", "s1").snapshot() == [turn] and memory.get("bob", "s1") is None  # type: ignore[union-attr]
