"""The Knowledge base page's "BM25 words" section (AppTest, issue 41): suggestions fill the dictionary's text area,
an example query shows its terms now and with the words being edited, Apply re-indexes BM25 (vectors kept) and the
counts change, and a bad term is one line that changes nothing."""

from __future__ import annotations

import os

import pytest
from streamlit.testing.v1 import AppTest

import ui.access
from rag_core import bootstrap
from rag_core.access.memory import MemoryAccessStore
from rag_core.access.records import Role
from rag_core.dictionary import MAX_TERM_CHARS
from rag_core.kb import upgrade
from rag_core.kb.upgrade import RUNNING, STOPPED, UpgradeStatus
from rag_core.store.milvus.rows import utc_now
from tests.helpers import SAMPLE_KB
from tests.ui.apptest_helpers import APP, app_at, texts
from ui.state import get_settings, knowledge_bases

KB_PAGE = "pages/knowledge_base.py"
TERM = "内存泄漏排查"
QUERY = "内存泄漏排查怎么做"


@pytest.fixture
def docs(fresh_kb):
    paths = [SAMPLE_KB / "runbooks" / n for n in ("memory_leak_zh.md", "slow_query_zh.md", "disk_full.md")]
    reports = fresh_kb.ingestor.ingest_paths(paths)
    assert [r.status for r in reports] == ["added"] * 3
    return fresh_kb


def area(at, which: str):
    name = knowledge_bases().default
    return at.text_area(key=f"kb.bm25_{which}.{name}")


def test_suggest_fills_the_dictionary_and_the_example_shows_before_and_after(docs) -> None:
    at = app_at(KB_PAGE)
    assert "BM25 words" in [s.value for s in at.subheader]
    assert area(at, "dictionary").value == "" and area(at, "stop_words").value == ""
    assert "In use: dictionary **0** terms · stop words **0**" in texts(at)

    at.button(key="kb.bm25_suggest").click().run()
    assert not at.exception, at.exception
    suggested = [line for line in area(at, "dictionary").value.splitlines() if line]
    assert suggested, "no suggestions"
    (frame,) = [d.value for d in at.dataframe if list(d.value.columns) == ["term", "kind", "chunks"]]
    assert list(frame["term"]) == suggested  # the table lists what was added, with its kind and chunks
    assert set(frame["kind"]) <= {"heading", "code"} and all(frame["chunks"] >= 2)
    assert "terms suggested" in texts(at, "caption")

    area(at, "dictionary").set_value(TERM + "\n").run()
    at.text_input(key="kb.bm25_example").set_value(QUERY).run()
    assert not at.exception, at.exception
    shown = texts(at)
    assert "**Now:** `内存` · `泄漏` · `排查` · `怎么` · `做`" in shown
    assert f"**With the words above:** `内存` · `泄漏` · `排查` · `怎么` · `做` · `{TERM}`" in shown

    at.run()  # a rerun keeps the edits, and so does a visit to another page
    assert area(at, "dictionary").value == TERM + "\n"
    at.switch_page("pages/debugger.py").run()
    assert not at.exception, at.exception
    at.switch_page(KB_PAGE).run()
    assert not at.exception, at.exception
    assert area(at, "dictionary").value == TERM + "\n"


def test_apply_reindexes_and_the_counts_change(docs) -> None:
    name = knowledge_bases().default
    chunks_before = knowledge_bases().info(name).chunks
    at = app_at(KB_PAGE)
    assert at.button(key="kb.bm25_apply").disabled  # nothing changed yet
    area(at, "dictionary").set_value(f"{TERM}\nzephyrctl\n").run()
    area(at, "stop_words").set_value("怎么\n").run()
    at.button(key="kb.bm25_apply").click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    info = knowledge_bases().info(name)
    assert info.dictionary == (TERM, "zephyrctl") and info.stop_words == ("怎么",)
    assert info.chunks == chunks_before
    assert f"BM25 re-indexed ({chunks_before:,} chunks, none embedded again): dictionary 2 terms, stop words 1." \
        in texts(at, "success")
    assert "In use: dictionary **2** terms · stop words **1**" in texts(at)
    assert area(at, "dictionary").value == f"{TERM}\nzephyrctl"  # the areas hold the words in use now

    at.text_input(key="kb.bm25_example").set_value(QUERY).run()
    assert f"**Now:** `内存` · `泄漏` · `排查` · `做` · `{TERM}`" in texts(at)
    dbg = app_at("pages/debugger.py", q=QUERY)  # the debugger searches the new collection
    assert not dbg.exception, dbg.exception


def test_a_too_long_term_is_one_line_and_changes_nothing(docs) -> None:
    name = knowledge_bases().default
    at = app_at(KB_PAGE)
    area(at, "dictionary").set_value("ok\n" + "x" * (MAX_TERM_CHARS + 1) + "\n").run()
    assert not at.exception, at.exception
    (error,) = at.error
    assert "dictionary, line 2:" in error.value and f"longer than {MAX_TERM_CHARS} characters" in error.value
    assert "\n" not in error.value
    assert at.button(key="kb.bm25_apply").disabled
    assert knowledge_bases().info(name).dictionary == ()


def test_an_editor_sees_the_words_but_may_not_apply_them(docs, monkeypatch: pytest.MonkeyPatch) -> None:
    store = MemoryAccessStore()
    monkeypatch.setattr(bootstrap, "build_access_store", lambda settings, env=None: store)
    monkeypatch.setenv("RAG_AUTH_REQUIRED", "true")
    ui.access.clear_access_store()
    try:
        name = knowledge_bases().default
        made, _ = store.create_user("ed", {name: Role.EDITOR})
        at = AppTest.from_file(APP, default_timeout=60)
        at.session_state[ui.access.PRINCIPAL] = made.principal()
        at.run()
        at.switch_page(KB_PAGE)
        at.run()
        assert not at.exception, at.exception
        area(at, "dictionary").set_value(TERM).run()
        apply = at.button(key="kb.bm25_apply")
        assert apply.disabled and "admin role" in (apply.help or "")
        assert not at.button(key="kb.bm25_suggest").disabled  # reviewing terms is a reader's too
    finally:
        ui.access.clear_access_store()


def bm25_status(state: str, pid: int) -> None:
    name = knowledge_bases().default
    upgrade._write(get_settings(), UpgradeStatus(name, "local", "local", state, 3, 10, 1.0, utc_now(), utc_now(), pid,
                                                 "killed" if state == STOPPED else "", kind="bm25"))


def test_a_stopped_reindex_is_said_here_and_not_as_an_upgrade(docs) -> None:
    bm25_status(STOPPED, os.getpid())
    at = app_at(KB_PAGE)
    warnings = texts(at, "warning")
    assert "The last BM25 re-index stopped at 3 of 10 chunks (killed); the words in use did not change" in warnings
    assert "The upgrade to" not in warnings and "kb.upgrade_resume" not in [b.key for b in at.button]
    assert "kb.upgrade" in [b.key for b in at.button]
    assert "stopped at" not in texts(app_at())  # Home: no upgrade to resume


def test_apply_waits_while_a_job_runs(docs) -> None:
    bm25_status(RUNNING, os.getpid())  # a live process: this one
    at = app_at(KB_PAGE)
    area(at, "dictionary").set_value(TERM).run()
    assert "is running: apply new words when it has finished" in texts(at, "info")
    assert at.button(key="kb.bm25_apply").disabled
    assert "A BM25 re-index is running" in texts(at, "caption") and "kb.upgrade" not in [b.key for b in at.button]
