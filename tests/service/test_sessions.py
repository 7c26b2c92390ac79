"""The API's chat sessions: the history window, the bounded count (least recently used first), threads."""

from __future__ import annotations

import threading

from rag_core.agent.session import Turn
from rag_core.service.sessions import ServiceSession, SessionStore


def test_a_session_keeps_only_the_last_answered_pairs():
    session = ServiceSession("s", pairs=2)
    for n in range(4):
        session.add(Turn(f"q{n}", f"a{n}"))
    session.add(Turn("unanswered", ""))
    assert [t.question for t in session.snapshot()] == ["q2", "q3"]
    assert session.history_messages(6) == [{"role": "user", "content": "q2"}, {"role": "assistant", "content": "a2"},
                                           {"role": "user", "content": "q3"}, {"role": "assistant", "content": "a3"}]
    session.clear()
    assert session.snapshot() == []


def test_the_least_recently_used_session_goes_first():
    store = SessionStore(max_sessions=2, pairs=6)
    a = store.get_or_create("u", "a")
    store.get_or_create("u", "b")
    assert store.get("u", "a") is a  # a is now the most recently used
    store.get_or_create("u", "c")
    assert len(store) == 2 and store.get("u", "b") is None and store.get("u", "a") is a
    assert store.get("other-user", "a") is None
    assert store.get_or_create("u", None).id  # a new id when none is given


def test_concurrent_use_from_threads():
    store = SessionStore(max_sessions=50, pairs=6)
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            for n in range(200):
                session = store.get_or_create("u", f"s{(i * 7 + n) % 80}")
                session.add(Turn(f"q{n}", "a"))
                session.history_messages(6)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(store) == 50
    assert all(len(store.get_or_create("u", f"s{k}").snapshot()) <= 6 for k in range(80))
