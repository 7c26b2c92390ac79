"""Retrieval debugger (AppTest): query parameters pre-fill and run, raw hits next to capped evidence
with every drop explained, and sliders other than retrieve-k re-run only post-processing."""

import pytest

from tests.ui.apptest_helpers import app_at, texts

PAGE = "pages/debugger.py"
QUERY = "CPU usage high alert"


@pytest.fixture
def searches(kb, monkeypatch):
    """Counts calls into the store's search channels (what a fetch costs); `search_both` searches each once."""
    calls = {"dense": 0, "bm25": 0}
    for method, channels in (("dense", ["dense"]), ("bm25", ["bm25"]), ("both", ["dense", "bm25"])):
        original = getattr(kb.store, f"search_{method}")

        def counted(*args, _original=original, _channels=channels, **kwargs):
            for channel in _channels:
                calls[channel] += 1
            return _original(*args, **kwargs)

        monkeypatch.setattr(kb.store, f"search_{method}", counted)
    return calls


def frames(at):
    hits = next(d.value for d in at.dataframe if "dense #" in d.value.columns)
    evidence = next(
        d.value for d in at.dataframe if list(d.value.columns) == ["evidenceKey", "score", "hit reasons", "content"]
    )
    return hits, evidence


def metrics(at):
    return {m.label: m.value for m in at.metric}


def test_query_params_prefill_and_run(kb, searches):
    at = app_at(PAGE, q=QUERY, retrieve_k="12", return_n="3", max_chunks_per_document="1", mode="hybrid")
    assert at.text_input(key="q").value == QUERY
    assert (at.slider(key="retrieve_k").value, at.slider(key="return_n").value,
            at.slider(key="max_chunks_per_document").value) == (12, 3, 1)
    hits, evidence = frames(at)
    assert len(hits) == 12 and len(evidence) <= 3
    assert searches == {"dense": 1, "bm25": 1}
    # capped: at most one block per document, each with its evidenceKey
    docs = [key.split("#chunk-")[0] for key in evidence["evidenceKey"]]
    assert len(docs) == len(set(docs))
    assert all("#chunk-" in key for key in evidence["evidenceKey"])
    # every dropped hit says why
    dropped = hits[hits["fate"] != "kept"]
    assert len(dropped) == 12 - len(evidence)
    assert all(s.startswith(("duplicate of", "per-document cap (", "beyond return-n (")) for s in dropped["status"])
    assert "per-document cap (1)" in set(hits["status"])
    assert "per-document cap: cpu_high.md already has 1" in texts(at)  # the full reason, in the drop list
    # channel ranks are shown for the fused ranking
    assert hits["dense #"].notna().any() and hits["bm25 #"].notna().any()
    shown = metrics(at)
    assert shown["Raw hits"] == "12" and shown["Evidence blocks"] == str(len(evidence))
    assert "Searched the knowledge base (hybrid)" in texts(at, "caption")
    assert at.json  # the projection and the full result, in expanders


def test_post_processing_sliders_do_not_search_again(kb, searches):
    at = app_at(PAGE, q=QUERY, merge="false")  # each kept hit its own block (merging is tests/ui/test_ui_context.py's)
    assert searches == {"dense": 1, "bm25": 1}
    _, evidence = frames(at)
    assert len(evidence) == 5

    at.slider(key="return_n").set_value(2).run()
    at.slider(key="max_chunks_per_document").set_value(1).run()
    assert not at.exception
    assert searches == {"dense": 1, "bm25": 1}
    assert "Hits reused from the previous search" in texts(at, "caption")
    _, evidence = frames(at)
    assert len(evidence) == 2

    at.slider(key="retrieve_k").set_value(30).run()
    assert not at.exception and searches == {"dense": 2, "bm25": 2}
    at.segmented_control(key="mode").set_value("bm25").run()
    assert not at.exception and searches == {"dense": 2, "bm25": 3}
    hits, _ = frames(at)
    assert hits["dense #"].isna().all()
    at.segmented_control(key="mode").set_value("hybrid").run()  # back to a cached fetch
    assert searches == {"dense": 2, "bm25": 3}


def test_fusion_controls_reach_the_search(kb, searches):
    at = app_at(PAGE, q=QUERY)
    assert frames(at)[0]["score"].max() > 0.5  # the default (dbsf for the local embedder): normalised scores
    at.segmented_control(key="fusion").set_value("rrf").run()
    assert not at.exception and searches == {"dense": 2, "bm25": 2}
    assert frames(at)[0]["score"].max() < 0.05  # RRF: weight / (k + rank)
    at.number_input(key="rrf_k").set_value(10).run()
    assert not at.exception and searches == {"dense": 3, "bm25": 3}
    at.segmented_control(key="fusion").set_value("weighted").run()
    assert at.number_input(key="rrf_k").disabled  # only meaningful for RRF
    assert not at.exception and searches == {"dense": 4, "bm25": 4}
    at.slider(key="dense_weight").set_value(1.0).run()
    assert not at.exception and searches == {"dense": 5, "bm25": 5}


def test_a_score_threshold_from_the_url_drops_hits_with_the_reason_and_no_new_search(kb, searches):
    at = app_at(PAGE, q=QUERY, mode="dense", merge="false")  # the two best hits are neighbours: kept apart
    hits, _ = frames(at)
    threshold = round(float(hits["score"].iloc[2]) + 1e-4, 4)  # between the 2nd and the 3rd hit
    at.number_input(key="score_threshold").set_value(threshold).run()
    assert not at.exception and searches == {"dense": 1, "bm25": 0}  # post-processing only
    hits, evidence = frames(at)
    assert len(evidence) == 2
    below = hits[hits["fate"] == "below_threshold"]
    assert len(below) == len(hits) - 2 and all(s.startswith("below threshold (") for s in below["status"])
    assert metrics(at)["Below threshold"] == str(len(below))
    # the URL carries it like every control
    again = app_at(PAGE, q=QUERY, mode="dense", merge="false", score_threshold=str(threshold))
    assert again.number_input(key="score_threshold").value == threshold
    assert list(frames(again)[0]["fate"]) == list(hits["fate"])


def test_a_metadata_filter_from_the_url_scopes_the_search_and_counts_what_it_removed(kb):
    from rag_core.kb.tags import tag

    tag(kb.store, "cpu_high.md", ["team=sre"])
    try:
        at = app_at(PAGE, q=QUERY, filter="team=sre type=md")
        assert not at.exception
        hits, _ = frames(at)
        assert set(hits["evidenceKey"].str.split("#").str[0]) == {"cpu_high.md"}
        assert "The filter kept 1 of 3 documents: it removed 2 documents" in texts(at, "caption")
        at = app_at(PAGE, q=QUERY, filter="folder=nowhere/")
        assert "matches no document (of 3): nothing was searched" in texts(at, "warning")
        at = app_at(PAGE, q=QUERY, filter="owner=x")
        assert "Unknown filter key 'owner'. Known keys: folder, type, ingested, team." in texts(at, "error")
    finally:
        tag(kb.store, "cpu_high.md", ["team="])


def test_a_filter_matching_no_document_links_to_the_documents_metadata(kb):
    """The warning used to send the person to the command line (`docs --json`): it names the Knowledge base page,
    where each document's metadata is, and links there; the command stays in its words as a secondary hint."""
    at = app_at(PAGE, q=QUERY, filter="folder=nowhere/")
    warning = texts(at, "warning")
    assert "matches no document (of 3)" in warning and "the Knowledge base page shows each document's metadata" in \
        warning and "docs --json" not in warning
    assert "From the command line: `python -m rag_core docs --json`" in texts(at, "caption")
    (link,) = [p for p in at.get("page_link") if "metadata" in p.proto.label]
    assert link.proto.page == "knowledge_base"  # its URL path
    at = app_at(PAGE, q=QUERY, filter="type=md")  # a filter that matches: no link
    assert not [p for p in at.get("page_link") if "metadata" in p.proto.label]


def test_commas_are_or_in_a_filter_and_an_empty_result_draws_no_chart(kb):
    at = app_at(PAGE, q=QUERY, filter="type=md,html")
    hits, _ = frames(at)
    assert len(hits) and set(hits["evidenceKey"].str.split("#").str[0].str.rsplit(".").str[-1]) <= {"md", "html"}
    assert at.pills(key="dbg.chips").options == ["type=md", "type=html"]
    at = app_at(PAGE, q=QUERY, filter="folder=nowhere/")
    assert "No hits to chart." in texts(at, "caption") and not at.get("plotly_chart")


def test_the_hit_list_shows_each_hit_s_key_fate_channels_and_marked_words(kb):
    at = app_at(PAGE, q=QUERY, retrieve_k="8")
    (html,) = [h.proto.body for h in at.get("html") if "hit-list" in h.proto.body]
    hits, _ = frames(at)
    assert html.count('class="hit-row"') == 8
    for key in hits["evidenceKey"]:
        assert f">{key}</code>" in html  # whole, chunk number included
    assert "<mark>CPU</mark>" in html and "dense #" in html and "bm25 #" in html
    # the BM25 terms each hit matched, with their shares; the query's terms above the list
    assert html.count('class="hit-terms"') >= 1 and "<b>cpu</b>" in html and "%" in html
    assert "BM25 terms of the query" in texts(at, "caption")


def test_a_chunk_disabled_from_the_debugger_is_a_drop_with_reason_disabled(kb):
    at = app_at(PAGE, q=QUERY)
    hits, _ = frames(at)
    first = hits["evidenceKey"].iloc[0]
    at.selectbox(key="dbg.edit_key").set_value(first).run()
    at.button(key="dbg.edit_toggle").click().run()
    try:
        assert not at.exception
        hits, evidence = frames(at)
        assert hits.loc[hits["evidenceKey"] == first, "status"].iloc[0] == "disabled"
        assert first not in set(evidence["evidenceKey"]) and metrics(at)["Disabled"] == "1"
        assert f"{first} is disabled: every lookup leaves it out." in texts(at, "success")  # it says so
        at.selectbox(key="dbg.edit_key").set_value(first).run()
        at.button(key="dbg.edit_toggle").click().run()  # now "Enable"
        assert frames(at)[0].loc[lambda f: f["evidenceKey"] == first, "status"].iloc[0] == "kept"
    finally:
        kb.store.edits.drop()


def test_a_chunk_edited_from_the_debugger_gets_its_new_rank(kb):
    from rag_core.kb.chunk_edits import revert

    at = app_at(PAGE, q=QUERY)
    key = frames(at)[0]["evidenceKey"].iloc[-1]  # the lowest-ranked hit
    at.selectbox(key="dbg.edit_key").set_value(key).run()
    at.text_input(key=f"dbg.edit_keywords.{key}").set_value("quuxwidget").run()
    at.button(key="dbg.edit_save").click().run()
    try:
        assert not at.exception
        at.text_input(key="q").set_value("quuxwidget").run()
        at.segmented_control(key="mode").set_value("bm25").run()
        hits, evidence = frames(at)
        assert hits["evidenceKey"].iloc[0] == key and list(hits["evidenceKey"]).count(key) == 1
    finally:
        revert(kb.store, kb.embedder, key)


def test_return_n_larger_than_retrieve_k_is_clamped_with_a_warning(kb):
    at = app_at(PAGE, q=QUERY, retrieve_k="3", return_n="8")
    assert "using return-n = 3" in texts(at, "warning")
    _, evidence = frames(at)
    assert len(evidence) <= 3


def test_no_query_asks_for_one_and_an_empty_kb_says_so(fresh_kb):
    at = app_at(PAGE)
    assert "Type a query" in texts(at, "info")
    at.text_input(key="q").set_value("anything").run()
    assert not at.exception
    assert "knowledge base is empty" in texts(at, "error")


# ------------------------------------------------------------------------------------ rerank stage
@pytest.fixture
def reranker(kb, monkeypatch):
    """A scripted reranker on the shared workbench: prefers chunks that mention "top"."""
    from tests.retrieval.fakes import ScriptedReranker

    model = ScriptedReranker(lambda q, d: d.lower().count("top") + 0.001 * len(d))
    monkeypatch.setattr(kb.retriever, "reranker", model)
    return model


def test_a_reranker_reorders_the_evidence_and_the_movement_is_shown(kb, reranker):
    at = app_at(PAGE, q=QUERY, retrieve_k="12", return_n="5")
    assert at.toggle(key="rerank").label == "Rerank with fake:scripted" and at.toggle(key="rerank").value
    assert len(reranker.calls) == 1 and len(reranker.calls[0][1]) == 12  # default candidates 20 > retrieve-k
    hits, evidence = frames(at)
    assert list(hits["rank"]) == list(range(1, 13))
    assert hits["rerank score"].is_monotonic_decreasing and (hits["move"] != "").all()
    assert any(m.startswith("▲") for m in hits["move"]) and any(m.startswith("▼") for m in hits["move"])
    assert "What the reranker changed" in texts(at)
    assert "reranked the top 12 with fake:scripted" in texts(at, "caption")
    # return-n / cap reuse the reranked fetch: the model is not called again
    at.slider(key="return_n").set_value(3).run()
    assert not at.exception and len(reranker.calls) == 1
    # fewer candidates: only those are scored and moved
    at.slider(key="rerank_candidates").set_value(4).run()
    hits, _ = frames(at)
    assert len(reranker.calls[-1][1]) == 4 and (hits["move"] != "").sum() == 4
    # switched off: the fused order, no rerank columns' data
    at.toggle(key="rerank").set_value(False).run()
    hits, _ = frames(at)
    assert hits["rerank score"].isna().all() and list(hits["fused #"]) == list(range(1, 13))
    assert "What the reranker changed" not in texts(at)


def test_a_failing_reranker_shows_a_warning_and_the_fused_order(kb, reranker):
    from rag_core.errors import RagError

    reranker.error = RagError("HTTP 503 from the rerank endpoint")
    at = app_at(PAGE, q=QUERY, retrieve_k="10")
    assert "Reranking with fake:scripted failed (HTTP 503 from the rerank endpoint)" in texts(at, "warning")
    hits, _ = frames(at)
    assert list(hits["fused #"]) == list(range(1, 11)) and hits["rerank score"].isna().all()


def test_a_reranker_that_keeps_failing_is_skipped_and_the_page_says_so(kb, monkeypatch):
    """Its circuit opens (rerank.circuit-failures, here 1): the next search skips it at once (#21 item 6)."""
    from rag_core.errors import RerankError
    from rag_core.rerank.circuit import GuardedReranker
    from tests.retrieval.fakes import ScriptedReranker

    model = ScriptedReranker(lambda q, d: 0.0, error=RerankError("no answer within 5 s", "timeout"))
    monkeypatch.setattr(kb.retriever, "reranker", GuardedReranker(model, failures=1, cooldown=60))
    at = app_at(PAGE, q=QUERY, retrieve_k="10")
    assert "Reranking with fake:scripted failed (no answer within 5 s)" in texts(at, "warning")
    at = app_at(PAGE, q=QUERY, retrieve_k="10")
    assert len(model.calls) == 1
    assert "Reranking with fake:scripted was skipped: it failed 1 time in a row" in texts(at, "warning")
    assert "Searches skip this reranker: it failed 1 time in a row (no answer within 5 s)" in texts(at, "caption")
    hits, _ = frames(at)
    assert list(hits["fused #"]) == list(range(1, 11))


def test_every_lookup_option_has_a_control_bound_to_its_name(kb, reranker):
    # The controls are made from the options' declaration (rag_core.retrieval.options): a new option shows here.
    from rag_core.retrieval.options import LOOKUP_OPTIONS

    at = app_at(PAGE, q=QUERY, doc_id="cpu_high.md", rrf_k="7", fusion="rrf")
    keys = {w.key for kind in ("slider", "number_input", "toggle", "text_input", "multiselect", "button_group")
            for w in getattr(at, kind) if w.key}
    assert {o.name for o in LOOKUP_OPTIONS} <= keys
    assert at.multiselect(key="doc_id").value == ["cpu_high.md"] and at.number_input(key="rrf_k").value == 7
    hits, _ = frames(at)
    assert set(hits["evidenceKey"].str.split("#").str[0]) == {"cpu_high.md"}  # the doc_id filter searched


def test_without_a_reranker_the_page_says_how_to_configure_one(kb):
    at = app_at(PAGE, q=QUERY)
    assert sorted(t.key for t in at.toggle) == ["compare", "cross_language", "merge"]  # no "rerank" toggle
    assert "set `rerank.provider`" in texts(at, "caption")


# ------------------------------------------------------------------------------------ why wasn't it retrieved?
def explain_frame_of(at):
    return next(d.value for d in at.dataframe if "what happened" in d.value.columns)


def test_the_expected_document_from_the_url_is_explained_with_a_fix_link(kb):
    at = app_at(PAGE, q="disk full cleanup", retrieve_k="3", return_n="2", expect="cpu_high.md")
    assert at.selectbox(key="expect").value == "cpu_high.md"
    verdict = texts(at, "warning")
    assert "cpu_high.md is not in the evidence" in verdict and "Smallest change: retrieve-k ≥" in verdict
    frame = explain_frame_of(at)
    n_chunks = next(d.chunks for d in kb.store.list_documents() if d.doc_id == "cpu_high.md")
    assert len(frame) == n_chunks and (frame["target"] == "★").all()
    assert frame["dense #"].notna().all()  # exact ranks over the whole knowledge base
    assert frame["what happened"].str.startswith("beyond retrieve-k (3)").all()
    (table,) = [d for d in at.dataframe if "what happened" in d.value.columns]
    # no rerank stage ran: no rerank score column printing None; every other column shown
    assert "rerank score" not in table.proto.column_order and "evidenceKey" in table.proto.column_order
    link = next(e for e in at.get("page_link") if e.proto.label.startswith("Apply retrieve-k ≥"))
    assert link.proto.page == "debugger"
    assert "q=disk+full+cleanup&expect=cpu_high.md&retrieve_k=" in link.proto.query_string


def test_a_chunk_and_an_answer_text(kb):
    at = app_at(PAGE, q="disk full cleanup", expect="disk_full.md")
    assert "disk_full.md is in the evidence" in texts(at, "success")
    at.number_input(key="expect_chunk").set_value(0).run()
    frame = explain_frame_of(at)
    assert list(frame["target"]) == ["★"] + [""] * (len(frame) - 1)
    (terms,) = [h.proto.body for h in at.get("html") if "<code>disk_full.md#chunk-0</code>" in h.proto.body]
    assert "<b>disk</b>" in terms  # the expected chunk's BM25 terms of the query, with their shares
    at.number_input(key="expect_chunk").set_value(None).run()
    at.text_input(key="answer").set_value("this sentence is not in the runbook").run()
    assert not at.exception
    assert "does not occur in disk_full.md" in texts(at, "warning")


def test_an_expected_document_missing_from_the_live_knowledge_base_says_so(kb):
    at = app_at(PAGE, q="disk", expect="eval/only-in-the-eval-corpus.md")
    assert "No document 'eval/only-in-the-eval-corpus.md' in the knowledge base" in texts(at, "error")


def test_a_fix_beyond_the_sliders_is_given_as_a_command():
    from streamlit.testing.v1 import AppTest

    def script(retrieve_k: int) -> None:
        from ui.components import explanation_view

        data = {"query": "disk full", "retrieved": False, "verdict": "a.md is not in the evidence.", "depth": 1000,
                "params": {"retrieve_k": 20, "return_n": 5, "max_chunks_per_document": 2},
                "fix": {"target": "a.md#chunk-0", "changes": {"retrieve_k": retrieve_k, "return_n": 9},
                        "text": f"retrieve-k ≥ {retrieve_k} and return-n ≥ 9", "verified": True},
                "answer": None, "chunks": [], "notes": [], "warnings": []}
        explanation_view(data, {"q": "disk full"}, {"retrieve_k": 200, "return_n": 50})

    far = AppTest.from_function(script, args=(450,), default_timeout=60).run()
    assert not far.exception
    assert ('try `python -m rag_core search "disk full" --retrieve-k 450 --return-n 9 --max-chunks-per-document 2`'
            in texts(far, "caption"))
    assert not far.get("page_link")  # within the sliders it is a link (test_the_expected_document_from_the_url...)


def test_a_lookup_on_the_page_is_one_trace_with_its_stages(kb):
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from rag_core import tracing
    from rag_core.tracing import semconv as sc

    spans = InMemorySpanExporter()
    tracing.install(tracing.TracingConfig(), spans, simple=True)
    try:
        at = app_at(PAGE, q=QUERY, return_n="3")
    finally:
        tracing.install(tracing.TracingConfig(), pinned=False)
    assert not at.exception, at.exception
    _, evidence = frames(at)
    finished = spans.get_finished_spans()
    assert len({s.context.trace_id for s in finished}) == 1
    (root,) = [s for s in finished if s.parent is None]
    assert root.name == "debugger.lookup"
    assert [root.attributes[sc.document(i, sc.DOCUMENT_ID)] for i in range(len(evidence))] == list(
        evidence["evidenceKey"])
    assert {"embed", "hybrid_search", "fusion", "postprocess", "projection"} <= {s.name for s in finished}


def test_a_cross_language_stand_in_is_marked_and_the_toggle_turns_it_off(kb):
    # The shared knowledge base is English: a Chinese question with no Latin word can match none of it in BM25.
    at = app_at(PAGE, q="磁盘使用率超过 90% 怎么办？")
    assert at.toggle(key="cross_language").value is True  # rag.cross-language's default
    hits, evidence = frames(at)
    stand_ins = hits[hits["cross-language"]]
    assert len(stand_ins) and stand_ins["bm25 #"].isna().all()  # only BM25's share is borrowed, never a rank
    assert evidence["evidenceKey"][0].startswith("disk_full.md#")
    at.toggle(key="cross_language").set_value(False).run()
    assert not at.exception
    hits, _ = frames(at)
    assert not hits["cross-language"].any()


# ------------------------------------------------------------------------------------ a follow-up question
EARLIER = ("user: How do I free disk space when a node disk is full?\n"
           "assistant: Clean the journal [disk_full.md#chunk-1]")
FOLLOW_UP = "What is the first step?"


def test_previous_turns_rewrite_the_follow_up_and_both_questions_are_shown(kb):
    alone = app_at(PAGE, q=FOLLOW_UP)
    assert "**Asked:**" not in texts(alone)  # no earlier turns: nothing rewritten, nothing said
    _, evidence_alone = frames(alone)
    at = app_at(PAGE, q=FOLLOW_UP, history=EARLIER)
    assert at.text_area(key="history").value == EARLIER
    shown = texts(at)
    assert f"**Asked:** {FOLLOW_UP}" in shown
    assert "**Searched:** What is the first step? (free disk space node full; Runbook: Disk Space Low > Alerts" in shown
    outcome = texts(at, "caption")
    assert "rewritten offline: borrowed “free”, “disk”, “space”, “node”, “full”" in outcome
    assert "after 2 earlier messages" in outcome
    _, evidence = frames(at)
    assert evidence["evidenceKey"].iloc[0].startswith("disk_full.md#chunk-")
    assert list(evidence["evidenceKey"]) != list(evidence_alone["evidenceKey"])
    assert not evidence_alone["evidenceKey"].iloc[0].startswith("disk_full.md#")
    # the rewrite control, then rewriting off: the question is searched as asked, and the page says so
    assert at.button_group(key="rewrite").value == "auto"
    at.button_group(key="rewrite").set_value("off").run()
    assert f"**Searched:** {FOLLOW_UP}" in texts(at) and "rewriting off" in texts(at, "caption")
    _, evidence_off = frames(at)
    assert list(evidence_off["evidenceKey"]) == list(evidence_alone["evidenceKey"])


def test_a_malformed_previous_turns_box_is_one_error_and_nothing_is_searched(kb, searches):
    at = app_at(PAGE, q=FOLLOW_UP, history="How do I free disk space?\nassistant: Clean the journal")
    (error,) = at.error
    assert 'Previous turns, turn 1: write it as "user: ..." or "assistant: ..."' in error.value
    assert searches == {"dense": 0, "bm25": 0} and not at.dataframe


def test_why_wasn_t_it_retrieved_uses_the_previous_turns(kb):
    # one evidence block: the follow-up alone finds a CPU runbook chunk first; searched with the earlier turns, the
    # disk runbook's (the panel's own lookup and channel ranks take the history too)
    at = app_at(PAGE, q=FOLLOW_UP, history=EARLIER, expect="disk_full.md", return_n="1")
    assert "disk_full.md is in the evidence" in texts(at, "success")
    assert explain_frame_of(at)["dense #"].min() == 1
    alone = app_at(PAGE, q=FOLLOW_UP, expect="disk_full.md", return_n="1")
    assert "disk_full.md is not in the evidence" in texts(alone, "warning")


def test_a_model_rewrite_that_fails_or_adds_facts_is_a_warning_and_the_question_is_searched_as_asked(kb, monkeypatch):
    from rag_core.bootstrap import build_rewriter
    from rag_core.config import load_settings
    from tests.servers.chat import Completion, OpenAIChatServer

    with OpenAIChatServer() as server:
        env = {"RAG_CHAT_PROVIDER": "openai", "RAG_CHAT_BASE_URL": server.base_url, "RAG_CHAT_MODEL": "test-chat",
               "RAG_CHAT_MAX_RETRIES": "0", "OPENAI_API_KEY": "sk-chat-test"}
        monkeypatch.setattr(kb.retriever, "rewriter", build_rewriter(load_settings(env=env), env))
        server.reply(server.server_error(500), Completion.say("What is the first step on node-7 after a disk alert?"))
        failed = app_at(PAGE, q=FOLLOW_UP, history=EARLIER)
        assert "could not be rewritten by test-chat" in texts(failed, "warning")
        assert f"**Searched:** {FOLLOW_UP}" in texts(failed) and "model failed: " in texts(failed, "caption")
        rejected = app_at(PAGE, q=FOLLOW_UP, history=EARLIER, retrieve_k="19")  # another search: the model again
        assert "test-chat's rewrite of the follow-up question was not used: it adds node-7" in texts(rejected,
                                                                                                      "warning")
        assert "model's rewrite rejected: adds node-7" in texts(rejected, "caption")
        assert len(server.chat_requests()) == 2
