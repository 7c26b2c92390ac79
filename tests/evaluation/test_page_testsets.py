"""The Evaluation page's test sets through AppTest, on the two real knowledge bases of `two_kbs`: generate an
offline set with its warning, review it in the table (a cell edit, the item panel's buttons, the source chunk
with the answer marked), save it under a name, run it from the set picker, and score the agent's answers with
links into the debugger."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import pytest
from streamlit.testing.v1 import AppTest

from rag_core.config import load_settings
from rag_core.evaluation.generate import OFFLINE_WARNING
from rag_core.evaluation.testsets import load_test_set, saved_sets_dir
from tests.ui.apptest_helpers import app_at
from ui.state import clear_workbench
from ui.testsets import BASE, apply_edits, highlighted, offline_note, review_frame, source_chunk_html

PAGE = "pages/evaluation.py"


@pytest.fixture
def page(two_kbs, monkeypatch) -> Iterator[AppTest]:
    monkeypatch.setenv("RAG_DATA_DIR", str(two_kbs))
    monkeypatch.delenv("RAG_CONFIG", raising=False)
    monkeypatch.delenv("DASHSCOPE_API_KEY", raising=False)
    at = app_at(PAGE)  # through app.py, as the app runs it: the page's links need its navigation
    at.default_timeout = 90
    yield at
    clear_workbench()


def test_generate_review_save_then_run_and_score_the_answers(page: AppTest, two_kbs) -> None:
    at = page
    assert any(OFFLINE_WARNING in w.value for w in at.warning)  # offline is the default generator: said up front
    # and where the published benchmark found offline sets short of real labels, the page says so next to them
    assert any("Measured against real labels" in c.value and "covidqa tau 0.47, another winner" in c.value
               for c in at.caption)
    at.number_input(key="eval_gen_size").set_value(6)
    at.button(key="eval_gen_run").click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    base = at.session_state[BASE]
    assert base["kb"] == "biz" and len(base["items"]) == 6 and base["meta"]["generator"] == "offline"
    editor = at.data_editor(key=f"eval_ts_editor_{base['version']}")
    assert list(editor.value["id"]) == [f"g{n:03d}" for n in range(1, 7)]
    assert set(editor.value["review"]) == {"unreviewed"}

    # a cell edit in the table: the second item dropped, the third's question reworded
    at.session_state[f"eval_ts_editor_{base['version']}"] = {
        "edited_rows": {1: {"review": "dropped"}, 2: {"query": "Which settings does the vector search use?"}},
        "added_rows": [], "deleted_rows": []}
    at.run()
    assert not at.exception, at.exception
    # the item panel: the first item's source chunk with its answer marked, then accepted by its button
    marked = [h.value for h in at.html if 'class="source-chunk"' in h.value]
    assert marked and "<mark>" in marked[0] and "</mark>" in marked[0]
    at.selectbox(key="eval_ts_item").set_value("g001")
    at.button(key="eval_ts_accept").click().run()
    assert not at.exception, at.exception
    items = at.session_state[BASE]["items"]
    assert [i.review for i in items] == ["accepted", "dropped", "edited", "unreviewed", "unreviewed", "unreviewed"]
    assert items[2].query == "Which settings does the vector search use?"  # the table's edit folded in first
    at.selectbox(key="eval_ts_item").set_value("g004")
    at.button(key="eval_ts_mark").click().run()
    assert not at.exception and not at.session_state[BASE]["items"][3].should_answer

    version = at.session_state[BASE]["version"]
    at.text_input(key=f"eval_ts_name_{version}").set_value("page-set")
    at.button(key="eval_ts_save").click().run()
    assert not at.exception, at.exception
    assert any("Saved 6 items as `page-set`" in s.value for s in at.success)
    saved = load_test_set(saved_sets_dir(load_settings(data_dir=two_kbs, env={}, config_file=None)), "page-set")
    assert [i.review for i in saved.items][:3] == ["accepted", "dropped", "edited"]
    assert saved.meta["generator"] == "offline" and saved.meta["reviewed"]["dropped"] == 1

    # the set picker offers it; a retrieval run on it leaves out the dropped and the unanswerable item
    at.radio(key="eval_source").set_value("Saved test set").run()
    assert not at.exception, at.exception
    at.radio(key="eval_pick").set_value("All").run()
    assert "page-set" in at.selectbox(key="eval_saved_set").options[-1]  # other tests may have saved sets too
    at.selectbox(key="eval_saved_set").set_value("page-set").run()
    assert at.multiselect(key="eval_saved_kbs").value == ["biz"]  # the knowledge base it was made from
    at.button(key="eval_run").click().run()
    assert not at.exception, at.exception
    run = at.session_state["eval_last_run"]["run"]
    assert run["set"] == "page-set" and len(run["points"][0]["queries"]) == 4

    # the answers of the offline agent, scored, each item with a link into the debugger
    at.selectbox(key="eval_ans_set").set_value("page-set")
    at.checkbox(key="eval_ans_offline").check()
    at.button(key="eval_ans_run").click().run()
    assert not at.exception, at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Faithfulness"] == "absent" and metrics["Refusals"] != "–"
    table = next(d.value for d in at.dataframe if "citations" in d.value.columns)
    assert list(table["id"]) == ["g001", "g003", "g004", "g005", "g006"]  # the dropped item is not asked
    link = urlsplit(table["debugger"][0])
    assert link.path == "debugger" and parse_qs(link.query)["kb"] == ["biz"]
    assert parse_qs(link.query)["q"] == [table["query"][0]]


def test_review_helpers() -> None:
    from rag_core.evaluation.testsets import TestItem

    items = (TestItem("a", "q one", ("d.md",), ("an answer",), "d.md#chunk-0"),
             TestItem("b", "q two", ("d.md",), ("two",), "d.md#chunk-1"))
    frame = review_frame(items)
    frame.loc[0, "answer"] = "another"
    frame.loc[1, "should not answer"] = True
    out = apply_edits(items, frame)
    assert (out[0].answers, out[0].review) == (("another",), "edited")
    assert (out[1].should_answer, out[1].review) == (False, "unreviewed")
    assert apply_edits(items, review_frame(items)) == items
    assert highlighted("a <b>  an\nanswer here", "an answer") == "a &lt;b&gt;  <mark>an\nanswer</mark> here"
    assert highlighted("text", "absent") == "text"


CODE_CHUNK = """## Expanding a PVC

Patch the claim (quotes, <angle brackets> & all):

```bash
kubectl patch pvc data -p '{"spec": {"resources": {"requests": {"storage": "150Gi"}}}}'
```

### When x < 5 and y > 3
Expand by 50% of the current size.
# Not a heading of this page"""


def test_the_source_chunk_is_shown_as_the_knowledge_base_holds_it() -> None:
    """Code, quotes, < > and headings: escaped once, drawn as HTML, never read as Markdown (no heading made of some
    lines, no block ended at a code fence, no `&#x27;` shown inside code)."""
    shown = source_chunk_html(CODE_CHUNK, "Expand by 50% of the current size.")
    body = shown.split(">", 1)[1].rsplit("</div>", 1)[0]
    assert html.unescape(body.replace("<mark>", "").replace("</mark>", "")) == CODE_CHUNK  # escaped exactly once
    assert "<mark>Expand by 50% of the current size.</mark>" in body
    assert re.findall(r"</?[a-z]+", body) == ["<mark", "</mark"]  # no tag but the mark: no <h2>, <code>, <pre>
    assert "&amp;#x27;" not in shown and "&#x27;{&quot;spec&quot;" in body and "```" in body
    assert "&lt;angle brackets&gt; &amp; all" in body and "## Expanding a PVC" in body


def test_the_offline_note_comes_from_the_benchmark_result(tmp_path) -> None:
    result = tmp_path / "testsets.json"
    assert offline_note(result) is None  # not run: nothing said
    result.write_text('{"agreement": [{"set": "scifact", "generator": "offline", "tau": 0.9, "same_winner": true},'
                      ' {"set": "covidqa", "generator": "offline", "tau": 0.47, "same_winner": false},'
                      ' {"set": "covidqa", "generator": "model", "tau": 0.2, "same_winner": false}]}')
    note = offline_note(result)
    assert note is not None and "covidqa tau 0.47, another winner" in note and "scifact" not in note
    result.write_text('{"agreement": [{"set": "scifact", "generator": "offline", "tau": null, "same_winner": false}]}')
    assert "scifact tau undefined, another winner" in offline_note(result)  # it cannot rank them at all
    result.write_text('{"agreement": [{"set": "scifact", "generator": "offline", "tau": 0.9, "same_winner": true}]}')
    assert offline_note(result) is None


@pytest.fixture
def app(two_kbs, monkeypatch) -> Iterator[AppTest]:
    """The whole app (app.py, so pages can be left and come back to) on the Evaluation page, in English."""
    monkeypatch.setenv("RAG_DATA_DIR", str(two_kbs))
    monkeypatch.delenv("RAG_CONFIG", raising=False)
    monkeypatch.delenv("DASHSCOPE_API_KEY", raising=False)
    yield app_at("pages/evaluation.py", lang="en")
    clear_workbench()


def test_table_edits_survive_leaving_the_page_and_switching_language(app: AppTest) -> None:
    """Streamlit drops a widget's state when a run does not draw it (another page), so the table's edits are kept
    with the set in the session: back on the page, and in the other language, the edit is still there, and the
    item's review column says it was edited."""
    at = app
    at.number_input(key="eval_gen_size").set_value(4)
    at.button(key="eval_gen_run").click().run()
    assert not at.exception, at.exception
    key = f"eval_ts_editor_{at.session_state[BASE]['version']}"
    at.session_state[key] = {"edited_rows": {1: {"query": "How full may the disk get?"}}, "added_rows": [],
                             "deleted_rows": []}
    at.run()
    assert not at.exception, at.exception

    def table() -> list[tuple[str, str]]:
        editor = next(e for e in at.data_editor if e.key and e.key.startswith("eval_ts_editor_"))
        return list(zip(editor.value["review"], editor.value["query"]))

    assert table()[1] == ("edited", "How full may the disk get?")  # the review column follows the edit
    assert at.session_state[BASE]["items"][1].query == "How full may the disk get?"
    at.switch_page("pages/home.py").run()
    assert not at.exception, at.exception
    at.switch_page("pages/evaluation.py").run()
    assert not at.exception, at.exception
    assert table()[1] == ("edited", "How full may the disk get?")
    # a later edit of another row keeps the first
    key = next(e.key for e in at.data_editor if e.key and e.key.startswith("eval_ts_editor_"))
    at.session_state[key] = {"edited_rows": {2: {"review": "dropped"}}, "added_rows": [], "deleted_rows": []}
    at.run()
    assert [r for r, _ in table()] == ["unreviewed", "edited", "dropped", "unreviewed"]
    assert table()[1][1] == "How full may the disk get?"
    # the language switched (AppTest reruns the page alone, without app.py's sidebar: the switcher's binding to
    # the URL is what changes; tests/e2e/test_e2e_evaluation.py clicks the switcher itself)
    at.query_params["lang"] = "zh"
    at.session_state["lang"] = "zh"
    at.run()
    assert not at.exception, at.exception
    assert "评测" in at.title[0].value
    assert [r for r, _ in table()] == ["unreviewed", "edited", "dropped", "unreviewed"]
    assert table()[1][1] == "How full may the disk get?"
    header = next(m.value for m in at.markdown if " — `" in m.value)  # the chosen item: question — state
    assert "`未审核`" in header and "`unreviewed`" not in header  # the chosen item's review state, translated


def test_follow_up_items_show_their_earlier_question_and_keep_it_when_edited(app: AppTest, two_kbs) -> None:
    at = app
    at.number_input(key="eval_gen_size").set_value(4)
    at.slider(key="eval_gen_follow_ups").set_value(25)
    at.button(key="eval_gen_run").click().run()
    assert not at.exception, at.exception
    items = at.session_state[BASE]["items"]
    assert [i.kind == "follow_up" for i in items] == [False, False, False, True]
    first = items[3].history[0].content
    key = f"eval_ts_editor_{at.session_state[BASE]['version']}"
    editor = at.data_editor(key=key)
    assert list(editor.value["asked after"]) == ["", "", "", first]  # read-only, beside the question
    at.session_state[key] = {"edited_rows": {3: {"query": "And how do I check that?"}}, "added_rows": [],
                             "deleted_rows": []}
    at.run()
    assert not at.exception, at.exception
    edited = at.session_state[BASE]["items"][3]
    assert (edited.query, edited.review, edited.history) == ("And how do I check that?", "edited", items[3].history)
    at.selectbox(key="eval_ts_item").set_value("g004").run()
    assert any(c.value == f"Asked before: {first}" for c in at.caption)  # above the question, in the item panel
    version = at.session_state[BASE]["version"]
    at.text_input(key=f"eval_ts_name_{version}").set_value("page-follow-ups")
    at.button(key="eval_ts_save").click().run()
    assert not at.exception, at.exception
    saved = load_test_set(saved_sets_dir(load_settings(data_dir=two_kbs, env={}, config_file=None)), "page-follow-ups")
    assert saved.items[3].history == items[3].history and saved.meta["follow_ups"] == 1
