"""The Evaluation page through AppTest on two knowledge bases: a sweep over them with and without a reranker
(a loopback server speaking the /v1/rerank protocol), the wins and losses between two rows, a parameter field
changed from its default applying to both, and the query-by-query comparison of two saved runs."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import pytest
from streamlit.testing.v1 import AppTest

from rag_core.evaluation.report import wins_losses
from tests.servers.rerank import OpenAIRerankServer
from tests.ui.apptest_helpers import app_at
from ui.state import clear_workbench

PAGE = "pages/evaluation.py"


@pytest.fixture(scope="module")
def server():
    srv = OpenAIRerankServer().start()
    yield srv
    srv.stop()


@pytest.fixture
def page(two_kbs, server, monkeypatch) -> Iterator[AppTest]:
    monkeypatch.setenv("RAG_DATA_DIR", str(two_kbs))
    monkeypatch.delenv("RAG_CONFIG", raising=False)
    for name, value in (("RAG_RERANK_BASE_URL", server.base_url), ("RAG_RERANK_MODEL", "test-rerank"),
                        ("RAG_RERANK_MAX_RETRIES", "0")):
        monkeypatch.setenv(name, value)
    at = app_at(PAGE)  # through app.py, as the app runs it: the page's links need its navigation
    at.default_timeout = 90
    yield at
    clear_workbench()


def _metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def test_knowledge_bases_with_and_without_the_reranker_then_wins_and_losses(page: AppTest, server) -> None:
    at = page
    at.radio(key="eval_target").set_value("Knowledge bases (as they are)").run()
    assert at.multiselect(key="eval_kbs").value == ["biz"]  # the one selected in the sidebar
    at.multiselect(key="eval_kbs").set_value(["biz", "small"])
    at.number_input(key="eval_limit").set_value(10)
    at.multiselect(key="eval_rerank").set_value(["none", "openai"])
    server.reset()
    at.button(key="eval_run").click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    saved = at.session_state["eval_last_run"]["run"]
    assert [(p["params"]["kb"], p["params"]["rerank"], p["params"]["chunk_size"], p["params"]["return_n"])
            for p in saved["points"]] == [("biz", "none", 800, 5), ("biz", "openai", 800, 5),
                                          ("small", "none", 300, 3), ("small", "openai", 300, 3)]
    assert len(server.requests) == 2 * 10  # one per query on each knowledge base, with the reranker only

    # a failed query opens the debugger on the knowledge base its row searched
    [failed] = [d.value for d in at.dataframe if "debugger" in d.value.columns]  # of the point shown first, #1
    assert len(failed) == saved["points"][0]["metrics"]["failed"] > 0
    assert all(parse_qs(urlsplit(url).query)["kb"] == ["biz"] for url in failed["debugger"])

    # wins and losses between two rows of the run: #1 and #2 first, then #1 against #3 (biz vs small)
    a_label, b_label = at.selectbox(key="eval_last_wl_a").value, at.selectbox(key="eval_last_wl_b").value
    assert a_label.startswith("#1 kb=biz") and b_label.startswith("#2 ")
    expected = wins_losses(saved["points"][0]["queries"], saved["points"][1]["queries"])
    # the counts name their rows, so they cannot be read the wrong way round
    assert _metrics(at) == {f"{b_label} better": str(len(expected.b_better)),
                            f"{a_label} better": str(len(expected.a_better)), "Same": str(len(expected.ties))}
    b = at.selectbox(key="eval_last_wl_b")
    b.set_value(b.options[2]).run()
    assert not at.exception
    at.selectbox(key="eval_last_wl_by").set_value("mrr@10").run()
    expected = wins_losses(saved["points"][0]["queries"], saved["points"][2]["queries"], "mrr@10")
    assert _metrics(at)[f"{b.value} better"] == str(len(expected.b_better))
    if expected.rows():
        table = next(d.value for d in at.dataframe if "better" in d.value.columns)
        assert list(table["query_id"]) == [r["query_id"] for r in expected.rows()]

    # a field changed from its default applies to every knowledge base; the others stay theirs
    at.multiselect(key="eval_rerank").set_value(["none"])
    at.text_input(key="eval_return_n").set_value("4")
    at.button(key="eval_run").click().run()
    assert not at.exception, at.exception
    second = at.session_state["eval_last_run"]["run"]
    assert [(p["params"]["kb"], p["params"]["return_n"]) for p in second["points"]] == [("biz", 4), ("small", 4)]

    # two saved runs, query by query (each run's best row first): small's row of the new run against run A's.
    # This test's two runs are the newest (other tests may have saved older ones in the shared data folder).
    at.run()
    runs = at.selectbox(key="eval_cmp_a").options
    at.selectbox(key="eval_cmp_a").set_value(runs[1])
    at.selectbox(key="eval_cmp_b").set_value(runs[0]).run()
    rows_a, rows_b = at.selectbox(key="eval_cmp_row_A"), at.selectbox(key="eval_cmp_row_B")
    rows_a.set_value(rows_a.options[0])
    rows_b.set_value(next(o for o in rows_b.options if "kb=small" in o)).run()
    assert not at.exception
    assert (len(rows_a.options), len(rows_b.options)) == (4, 2)  # run A: the first sweep, run B: the second
    compare_tab = at.tabs[1]
    shown = {m.label: int(m.value) for m in compare_tab.metric}
    better = sorted(label for label in shown if label != "Same")
    assert len(better) == 2 and all(label.endswith(" better") for label in better) and sum(shown.values()) == 10
    assert any("kb=small" in label for label in better)  # each count names its row
