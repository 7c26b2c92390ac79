"""Tables, plotly figures and the debugger's fetch cache, on real retrieval records (no Milvus)."""

from rag_core.agent import Toolbox, knowledge_base_tool
from rag_core.agent.kb_tool import tool_payload
from rag_core.chunking import chunk_text
from rag_core.records import DropReason, IngestReport, SearchHit, StoredDocument
from rag_core.retrieval import KnowledgeRetriever, LookupParams, SearchOptions
from tests.retrieval.fakes import ScriptedPort
from ui.charts import FATE_COLORS, chunk_length_histogram, score_by_rank_figure
from ui.lookup import cached_lookup, debugger_query_params, debugger_url
from ui.tables import describe_drop, documents_frame, evidence_frame, hits_frame, ingest_frame, timings_frame


def hit(doc: str, index: int, score: float, hit_id: str | None = None) -> SearchHit:
    return SearchHit(id=hit_id or f"{doc}-{index}", score=score, content=f"text of {doc} chunk {index} " * 3,
                     metadata={"docId": doc, "chunkIndex": index, "headingPath": "H"},
                     channels={"dense": (1, score), "bm25": (2, score * 10)})


HITS = [hit("a.md", 0, 0.9), hit("a.md", 0, 0.85, "dup"), hit("a.md", 1, 0.8), hit("a.md", 2, 0.7),
        hit("b.md", 0, 0.6), hit("c.md", 0, 0.5), hit("d.md", 0, 0.4)]


def lookup(return_n=3, cap=2):
    retriever = KnowledgeRetriever(ScriptedPort(HITS))
    return retriever.lookup("q", retrieve_k=7, return_n=return_n, max_chunks_per_document=cap).to_dict()


def test_hits_frame_has_one_row_per_raw_hit_with_reason_in_words():
    frame = hits_frame(lookup())
    assert list(frame["rank"]) == [1, 2, 3, 4, 5, 6, 7]
    assert list(frame["status"]) == ["kept", "duplicate of a.md#chunk-0", "kept",
                                     "per-document cap (2)", "kept",
                                     "beyond return-n (3)", "beyond return-n (3)"]
    assert list(frame["evidenceKey"])[:2] == ["a.md#chunk-0", "a.md#chunk-0"]
    assert frame.loc[0, "dense #"] == 1 and frame.loc[0, "bm25 #"] == 2
    assert not frame["cross-language"].any()  # no hit stood in for BM25 here


def test_hits_frame_marks_a_cross_language_stand_in():
    data = lookup()
    data["raw_hits"][2]["cross_language"] = True
    assert list(hits_frame(data)["cross-language"]) == [False, False, True, False, False, False, False]


def test_evidence_frame_is_the_kept_blocks_in_order():
    frame = evidence_frame(lookup())
    assert list(frame["evidenceKey"]) == ["a.md#chunk-0", "a.md#chunk-1", "b.md#chunk-0"]
    assert frame.loc[0, "hit reasons"] == "dense, bm25"


def test_describe_drop_reads_the_structured_reason_of_every_fate():
    drop = lambda **kw: DropReason(**kw).to_dict()  # noqa: E731
    assert describe_drop(None) == "kept"
    assert describe_drop(drop(kind="duplicate", key="x#chunk-1", by=("x#chunk-1",))) == "duplicate of x#chunk-1"
    # a doc_id that looks like the old status text is not misparsed: nothing is parsed any more
    cap = drop(kind="doc_cap", doc_id="dir/a (b) already has 9).md", count=2, by=("k#chunk-0", "k#chunk-3"))
    assert (
        describe_drop(cap) == "per-document cap: dir/a (b) already has 9).md already has 2 (`k#chunk-0`, `k#chunk-3`)"
    )
    assert describe_drop(cap, short=True) == "per-document cap (2)"
    assert describe_drop(drop(kind="beyond_return_n", count=5)) == "beyond return-n (5)"
    assert describe_drop({"kind": "something new"}) == "something new"


def test_score_figure_has_one_trace_per_fate_with_all_hits():
    fig = score_by_rank_figure(lookup())
    names = {t.name: list(t.x) for t in fig.data}
    assert names == {"kept": [1, 3, 5], "duplicate": [2], "per-document cap": [4], "beyond return-n": [6, 7]}
    assert {t.marker.color for t in fig.data} <= set(FATE_COLORS.values())


def test_the_score_threshold_is_a_line_on_the_score_chart_and_its_drops_a_fate():
    retriever = KnowledgeRetriever(ScriptedPort(HITS))
    data = retriever.lookup("q", retrieve_k=7, return_n=3, search=SearchOptions(mode="dense"),
                            score_threshold=0.55).to_dict()
    fig = score_by_rank_figure(data)
    assert {t.name: list(t.x) for t in fig.data}["below threshold"] == [6, 7]
    assert fig.layout.shapes[0].y0 == 0.55 and "threshold 0.55" in fig.layout.annotations[0].text
    assert describe_drop(data["raw_hits"][5]["drop"]) == "below threshold (0.50 < 0.55)"
    assert "shapes" not in score_by_rank_figure(lookup()).layout.to_plotly_json()  # no threshold, no line


def test_histogram_counts_every_chunk_and_marks_max_size():
    chunks = chunk_text("Sentence. " * 300, 120, 20)
    fig = chunk_length_histogram(chunks, 120)
    assert list(fig.data[0].x) == [len(c.text) for c in chunks]
    assert fig.layout.shapes[0].x0 == 120


def test_cached_lookup_fetches_once_per_query_k_and_search_options():
    port = ScriptedPort(HITS)
    retriever = KnowledgeRetriever(port)
    cache: dict = {}
    params = retriever.params(retrieve_k=7, return_n=3)
    first, cached = cached_lookup(retriever, "q", params, cache)
    assert (cached, port.calls) == (False, 1)
    second, cached = cached_lookup(retriever, " q ", retriever.params(retrieve_k=7, return_n=1,
                                                                       max_chunks_per_document=1), cache)
    assert (cached, port.calls) == (True, 1)
    assert len(second.evidence) == 1 and len(first.evidence) == 3
    cached_lookup(retriever, "q", retriever.params(retrieve_k=6, return_n=3), cache)
    cached_lookup(retriever, "q", retriever.params(retrieve_k=7, return_n=3, search=SearchOptions(mode="bm25")), cache)
    assert port.calls == 3
    for i in range(20):
        cached_lookup(retriever, f"q{i}", params, cache)
    assert len(cache) == 8


def test_debugger_links_carry_the_lookup():
    params = LookupParams(retrieve_k=30, return_n=4, max_chunks_per_document=1, search=SearchOptions(mode="bm25"))
    assert debugger_query_params("cpu 高", params) == {
        "q": "cpu 高", "retrieve_k": "30", "return_n": "4", "max_chunks_per_document": "1", "mode": "bm25",
        "expand": "none", "expand_neighbours": "1", "parent_max_size": "4000", "merge": "true", "block_tokens": "1000",
        "context_tokens": "6000"}
    assert debugger_query_params("x") == {"q": "x"}
    assert debugger_url("a b", {"retrieve_k": 5}) == "debugger?q=a+b&retrieve_k=5"


def test_documents_and_ingest_frames():
    docs = [StoredDocument("r/a.md", "a.md", "md", 2048, 3, "h", "v", "2026-01-02T03:04:05+00:00")]
    frame = documents_frame(docs)
    assert frame.to_dict("records") == [{"doc_id": "r/a.md", "file name": "a.md", "type": "md", "size (KB)": 2.0,
                                         "chunks": 3, "ingested at": "2026-01-02 03:04:05 UTC"}]
    reports = [IngestReport("a.md", "a.md", "added", 3, 0.5), IngestReport("b.pdf", "", "failed", 0, 0.1, "bad")]
    assert list(ingest_frame(reports)["reason"]) == ["", "bad"]
    assert list(timings_frame({"total": 3.0, "search": 2.0, "embed": 1.0})["stage"]) == ["embed", "search", "total"]


def test_the_debugger_shows_exactly_what_the_tool_returns():
    retriever = KnowledgeRetriever(ScriptedPort(HITS))
    for hits in (HITS, []):
        retriever.port.hits = hits
        run = Toolbox([knowledge_base_tool(retriever)]).run("search_knowledge_base", {"query": "q"})
        assert tool_payload(retriever.lookup("q")) == run.output.data


def test_hits_frame_and_movement_chart_after_a_rerank():
    from rag_core.retrieval.rerank import RerankParams
    from tests.retrieval.fakes import ScriptedReranker
    from ui.charts import rerank_movement_figure
    from ui.tables import reranked

    hits = [hit(doc, 0, 1.0 - i / 10) for i, doc in enumerate("abcdefg")]
    # the model reverses the top 5 (a..e); f and g are beyond the candidates and keep their place
    model = ScriptedReranker(lambda q, d: float("abcde".index(d[8])))
    data = KnowledgeRetriever(ScriptedPort(hits), reranker=model).lookup(
        "q", retrieve_k=7, return_n=3, rerank=RerankParams(candidates=5)).to_dict()
    frame = hits_frame(data)
    assert reranked(data) and not reranked(lookup())
    assert list(frame["evidenceKey"])[:3] == ["e#chunk-0", "d#chunk-0", "c#chunk-0"]
    assert list(frame["fused #"]) == [5, 4, 3, 2, 1, 6, 7]
    assert list(frame["move"]) == ["▲ 4", "▲ 2", "=", "▼ 2", "▼ 4", "", ""]
    assert frame["rerank score"].isna().sum() == 2
    fig = rerank_movement_figure(data)
    assert fig.data[0].name == "unchanged"
    points = sorted((x, y) for t in fig.data[1:] for x, y in zip(t.x, t.y))
    assert points == [(1, 5), (2, 4), (3, 3), (4, 2), (5, 1)]
    assert fig.layout.yaxis.autorange == "reversed"


def test_hits_and_cards_and_citation_chips_show_the_page_or_slide():
    from ui.chat import citation_label
    from ui.html import ChunkView, chunk_card_html

    located = [SearchHit(id="p", score=0.9, content="Alert042 threshold", metadata={
        "docId": "catalogue.pdf", "chunkIndex": 3, "location": "p. 2", "source": "catalogue.pdf"})]
    data = KnowledgeRetriever(ScriptedPort(located)).lookup("q", retrieve_k=1, return_n=1).to_dict()
    assert list(hits_frame(data)["where"]) == ["p. 2"]
    assert list(hits_frame(lookup())["where"])[0] == ""  # plain text has no pages
    assert data["evidence"][0]["cited_as"] == "catalogue.pdf p. 2"
    assert citation_label("catalogue.pdf#chunk-3", data["evidence"][0]) == "catalogue.pdf#chunk-3 p. 2"
    assert citation_label("gone.md#chunk-1", None) == "gone.md#chunk-1"
    card = chunk_card_html(ChunkView(index=3, text="x", doc_id="catalogue.pdf", location="p. 2"))
    assert "catalogue.pdf #3 p. 2" in card
