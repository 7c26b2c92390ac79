"""The Evaluation page through AppTest: a bundled run, an uploaded set with a failing query, comparison."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import pytest
from streamlit.testing.v1 import AppTest

from tests.ui.apptest_helpers import app_at
from ui.state import clear_workbench, get_workbench

PAGE = "pages/evaluation.py"


@pytest.fixture
def page(eval_data_dir, monkeypatch) -> Iterator[AppTest]:
    monkeypatch.setenv("RAG_DATA_DIR", str(eval_data_dir))
    monkeypatch.delenv("RAG_CONFIG", raising=False)
    at = app_at(PAGE)  # through app.py, as the app runs it: the page's links need its navigation
    at.default_timeout = 90
    yield at
    clear_workbench()  # the page opened the shared workbench: release its Milvus Lite file


def _frames(at: AppTest) -> list:
    """The run's tables (not the embedder trade-off table shown next to the embedder choice)."""
    return [d.value for d in at.dataframe if "embedder" not in d.value.columns]


def test_bundled_sweep_then_upload_then_compare(page: AppTest) -> None:
    at = page
    assert at.selectbox(key="eval_set").value == "sample"
    at.number_input(key="eval_limit").set_value(4)
    at.multiselect(key="eval_mode").set_value(["dense"])
    at.text_input(key="eval_return_n").set_value("3,5")
    at.button(key="eval_run").click().run()
    assert not at.exception, at.exception
    saved = at.session_state["eval_last_run"]["run"]
    assert saved["set"] == "sample" and len(saved["points"]) == 2
    assert saved["set_info"]["queries"] == {"rule": "sample", "sample": 4, "seed": 0, "chosen": 4, "of": 36}
    # the run used the shared workbench's embedder (one model in memory for every page), not a copy
    assert get_workbench().embedder._model is not None
    summary = _frames(at)[0]
    assert list(summary["return_n"]) == [3, 5] and "ndcg@10" in summary.columns
    assert not at.error

    at.radio(key="eval_source").set_value("Upload a set").run()
    assert not at.exception
    at.file_uploader(key="eval_upload").set_value((
        "mine.jsonl",
        b'{"query": "When does HighCPUUsageCritical fire?", "relevant": ["runbooks/cpu_high.md"]}\n'
        b'{"query": "What is the weather on Mars?", "relevant": ["nowhere.md"]}\n'
        b'{"query": "How do I free disk space?", "relevant": ["runbooks/disk_full.md"], '
        b'"answer": "words no runbook holds"}\n',
        "application/json")).run()
    assert not at.exception
    at.text_input(key="eval_return_n").set_value("5")
    at.button(key="eval_run").click().run()
    assert not at.exception, at.exception
    assert at.session_state["eval_last_run"]["run"]["set"] == "mine"
    assert any("nowhere.md" in w.value for w in at.warning)
    failed = next(f for f in _frames(at) if "debugger" in f.columns)
    assert list(failed["query"]) == ["What is the weather on Mars?", "How do I free disk space?"]
    link = urlsplit(failed["debugger"][0])
    assert link.path == "debugger"  # relative to the app's root, like every page's URL
    assert parse_qs(link.query) == {"q": ["What is the weather on Mars?"], "retrieve_k": ["20"], "return_n": ["5"],
                                    "max_chunks_per_document": ["2"], "mode": ["dense"],
                                    "expect": ["nowhere.md"]}  # opens "Why wasn't it retrieved?" on it
    # a query whose document is in the evidence fails on its answer: the panel is given the answer to look for
    assert list(failed["first relevant rank"])[1] is not None and not list(failed["answer found"])[1]
    assert parse_qs(urlsplit(failed["debugger"][1]).query)["answer"] == ["words no runbook holds"]

    assert at.selectbox(key="eval_cmp_a").value != at.selectbox(key="eval_cmp_b").value
    diff = next(f for f in _frames(at) if "B − A" in f.columns)
    assert "ndcg@10" in list(diff["metric"])


def test_bad_parameter_is_an_error_not_a_traceback(page: AppTest) -> None:
    page.text_input(key="eval_retrieve_k").set_value("twenty").run()
    assert not page.exception
    assert "retrieve-k: 'twenty' is not a valid int" in page.error[0].value


def test_sample_set_against_an_empty_live_knowledge_base_says_so(page: AppTest) -> None:
    page.number_input(key="eval_limit").set_value(2)
    page.radio(key="eval_target").set_value("Knowledge bases (as they are)")
    page.button(key="eval_run").click().run()
    assert not page.exception
    assert page.multiselect(key="eval_kbs").value == ["biz"]  # the one selected in the sidebar
    assert any("knowledge base 'biz' is empty" in e.value for e in page.error), [e.value for e in page.error]


def test_first_n_and_a_seed_are_choices_and_recorded(page: AppTest) -> None:
    at = page
    at.radio(key="eval_pick").set_value("First N")
    at.number_input(key="eval_limit").set_value(3)
    at.multiselect(key="eval_mode").set_value(["bm25"])
    at.button(key="eval_run").click().run()
    assert not at.exception, at.exception
    first = at.session_state["eval_last_run"]["run"]
    assert first["set_info"]["queries"]["rule"] == "first"
    assert [q["query_id"] for q in first["points"][0]["queries"]] == ["q1", "q2", "q3"]
    assert any("the first in file order" in m.value for m in at.markdown)

    at.radio(key="eval_pick").set_value("Random sample").run()
    at.number_input(key="eval_seed").set_value(5)
    at.button(key="eval_run").click().run()
    assert not at.exception, at.exception
    sampled = at.session_state["eval_last_run"]["run"]
    assert sampled["set_info"]["queries"] == {"rule": "sample", "sample": 3, "seed": 5, "chosen": 3, "of": 36}
    assert [q["query_id"] for q in sampled["points"][0]["queries"]] != ["q1", "q2", "q3"]


def test_a_sweep_over_expansions_at_one_token_budget(page: AppTest) -> None:
    at = page
    at.number_input(key="eval_limit").set_value(4)
    at.multiselect(key="eval_mode").set_value(["bm25"])
    at.multiselect(key="eval_expand").set_value(["none", "parent"])
    at.text_input(key="eval_context_tokens").set_value("1500")
    at.button(key="eval_run").click().run()
    assert not at.exception, at.exception
    points = at.session_state["eval_last_run"]["run"]["points"]
    assert [(p["params"]["expand"], p["params"]["context_tokens"]) for p in points] == [("none", 1500),
                                                                                       ("parent", 1500)]
    assert all(p["metrics"]["context_tokens_used"] <= 1500 for p in points)
    summary = _frames(at)[0]
    assert list(summary["expand"]) == ["none", "parent"] and "answer_in_context" in summary.columns


def test_runs_in_the_shared_database_are_compared_by_their_ids(eval_data_dir, monkeypatch, tmp_path) -> None:
    """With database.url the run picker lists the database's runs, newest first, by id; no folder is read."""
    from rag_core.db.engine import engine
    from rag_core.evaluation.runstore import SqlRunStore
    from tests.contracts.eval_runs import retrieval_run

    url = f"sqlite:///{tmp_path / 'shared.db'}"
    store = SqlRunStore(engine(url))
    older, newer = store.save(retrieval_run()), store.save(retrieval_run(kb="ops"))
    store.close()
    monkeypatch.setenv("RAG_DATA_DIR", str(eval_data_dir))
    monkeypatch.setenv("RAG_DATABASE_URL", url)
    monkeypatch.delenv("RAG_CONFIG", raising=False)
    at = app_at(PAGE)
    at.default_timeout = 90
    at.run()
    try:
        assert not at.exception, at.exception
        assert at.selectbox(key="eval_cmp_a").options == [newer.id, older.id]
        assert (at.selectbox(key="eval_cmp_a").value, at.selectbox(key="eval_cmp_b").value) == (older.id, newer.id)
        diff = next(f for f in _frames(at) if "B − A" in f.columns)
        assert "ndcg@10" in list(diff["metric"])
    finally:
        clear_workbench()
