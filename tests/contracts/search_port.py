"""Contract of the KnowledgeSearchPort (rag_core.ports): what the lookup path relies on.

A test module subclasses `SearchPortContract` and provides two fixtures:
* `search_port`: the adapter over `CORPUS` (each document chunked at CHUNK_SIZE / CHUNK_OVERLAP);
* `empty_search_port`: the adapter over an empty knowledge base.

An adapter that is also a DocumentChunksPort mixes in `DocumentChunksContract` too.
"""

from __future__ import annotations

import pytest

from rag_core.errors import RetrievalError
from rag_core.identity import chunk_index_of, doc_id_of
from rag_core.records import SearchHit, SearchOptions, SearchResult

CHUNK_SIZE, CHUNK_OVERLAP = 300, 0
LONG = "\n\n".join(
    f"Section {i}. The zebrafish hatchery keeps tank {i} at a steady temperature; the filter pump of tank {i} "
    f"is cleaned every {i + 2} days and the water is tested for ammonia and nitrite before feeding."
    for i in range(6))
CORPUS = {
    "ops/disk.md": "# Disk full\n\nWhen the disk usage alert DiskSpaceLow fires, delete old log files under "
                   "/var/log and rotate them with logrotate.",
    "ops/cpu.md": "# CPU high\n\nHighCPUUsage means a process keeps the processor busy; find it with top and "
                  "profile it before restarting the service.",
    "zh/内存.md": "# 内存泄漏\n\n内存泄漏时先用 jmap 导出堆转储，再分析哪些对象没有被回收。",
    "lab/zebrafish.md": LONG,
    'odd/x" or id != ".md': "A document whose name looks like a filter injection, about quartz watches.",
}
MODES = ("dense", "bm25", "hybrid")
INJECTION = 'x" or id != "'


def _doc(hit: SearchHit) -> str | None:
    return doc_id_of(hit.metadata)


class SearchPortContract:
    def doc_of(self, hit: SearchHit) -> str | None:
        """The CORPUS document a hit is from (an adapter that labels doc_ids maps them back)."""
        return _doc(hit)

    @pytest.fixture(params=MODES)
    def mode(self, request) -> str:
        return request.param

    @pytest.fixture
    def port(self, mode, search_port):
        return search_port.configured(SearchOptions(mode=mode))

    def test_search_returns_a_typed_result(self, port) -> None:
        result = port.search("disk usage alert", 3)
        assert isinstance(result, SearchResult) and isinstance(result.hits, tuple)
        assert result.hits and all(isinstance(h, SearchHit) for h in result.hits)
        assert all(isinstance(name, str) and value >= 0 for name, value in result.timings.items())

    @pytest.mark.parametrize("k", [1, 2, 5])
    def test_at_most_k_hits_best_first(self, port, k: int) -> None:
        hits = port.search("zebrafish tank filter pump", k).hits
        assert 0 < len(hits) <= k
        scores = [h.score for h in hits]
        assert scores == sorted(scores, reverse=True)

    def test_every_hit_has_chunk_identity_and_content(self, port) -> None:
        for hit in port.search("zebrafish tank temperature", 20).hits:
            assert self.doc_of(hit) in CORPUS and chunk_index_of(hit.metadata) is not None
            assert hit.content and hit.content in CORPUS[self.doc_of(hit)]
            assert hit.id

    def test_channels_carry_one_based_ranks_of_the_mode(self, port, mode) -> None:
        hits = port.search("disk log files", 10).hits
        for position, hit in enumerate(hits, start=1):
            assert hit.channels and set(hit.channels) <= {"dense", "bm25"}
            for rank, _score in hit.channels.values():
                assert isinstance(rank, int) and rank >= 1
            if mode in ("dense", "bm25"):
                assert set(hit.channels) == {mode} and hit.channels[mode][0] == position
                assert hit.channels[mode][1] == pytest.approx(hit.score)

    def test_a_distinctive_term_finds_its_document_first(self, search_port) -> None:
        for mode in ("bm25", "hybrid"):
            port = search_port.configured(SearchOptions(mode=mode))
            assert self.doc_of(port.search("DiskSpaceLow logrotate", 5).hits[0]) == "ops/disk.md"
            assert self.doc_of(port.search("jmap 堆转储", 5).hits[0]) == "zh/内存.md"

    def test_filters_restrict_to_exactly_that_document(self, port) -> None:
        hits = port.search("tank", 50, {"doc_id": "lab/zebrafish.md"}).hits
        assert hits and {self.doc_of(h) for h in hits} == {"lab/zebrafish.md"}
        both = port.search("tank disk", 50, {"doc_id": ["lab/zebrafish.md", "ops/disk.md"]}).hits
        assert {self.doc_of(h) for h in both} <= {"lab/zebrafish.md", "ops/disk.md"}

    def test_dense_filtered_search_returns_every_chunk_of_the_document(self, search_port) -> None:
        port = search_port.configured(SearchOptions(mode="dense"))
        hits = port.search("anything at all", 1000, {"doc_id": "lab/zebrafish.md"}).hits
        indexes = sorted(chunk_index_of(h.metadata) for h in hits)
        assert len(indexes) > 2 and indexes == list(range(len(indexes)))

    def test_an_injection_shaped_doc_id_matches_only_itself(self, port) -> None:
        assert port.search("tank quartz", 50, {"doc_id": INJECTION}).hits == ()
        own = port.search("quartz watches", 50, {"doc_id": 'odd/x" or id != ".md'}).hits
        assert own and {self.doc_of(h) for h in own} == {'odd/x" or id != ".md'}

    def test_a_labels_filter_restricts_to_the_documents_carrying_them(self, port) -> None:
        """Metadata filters (scope) reach the port as `labels`; injection-shaped values stay values."""
        def docs(*labels: str) -> set[str | None]:
            return {self.doc_of(h) for h in port.search("disk tank quartz 内存", 50, {"labels": list(labels)}).hits}

        assert docs("folder=ops") <= {"ops/disk.md", "ops/cpu.md"} and "ops/disk.md" in docs("folder=ops")
        assert docs("folder=lab", "folder=zh", "type=md") <= {"lab/zebrafish.md", "zh/内存.md"}
        assert "lab/zebrafish.md" in docs("folder=lab", "folder=zh", "type=md")
        assert docs("folder=odd") == {'odd/x" or id != ".md'}
        assert docs(f"folder={INJECTION}") == docs("folder=ops", "type=txt") == docs('folder=" or "" == "') == set()

    def test_bm25_returns_only_matching_chunks(self, search_port) -> None:
        port = search_port.configured(SearchOptions(mode="bm25"))
        assert port.search("xylophone", 10).hits == ()

    def test_configured_leaves_the_original_alone(self, search_port) -> None:
        before = [h.id for h in search_port.search("disk alert", 5).hits]
        other = search_port.configured(SearchOptions(mode="bm25", fusion="rrf"))
        assert all(set(h.channels) == {"bm25"} for h in other.search("disk alert", 5).hits)
        assert [h.id for h in search_port.search("disk alert", 5).hits] == before
        assert [h.id for h in search_port.configured(SearchOptions()).search("disk alert", 5).hits] == \
            [h.id for h in search_port.configured(SearchOptions()).search("disk alert", 5).hits]

    def test_searches_are_deterministic(self, port) -> None:
        first = [(h.id, h.score) for h in port.search("water ammonia nitrite", 8).hits]
        assert first == [(h.id, h.score) for h in port.search("water ammonia nitrite", 8).hits]

    def test_an_empty_knowledge_base_is_an_error_not_an_empty_result(self, empty_search_port) -> None:
        for mode in MODES:
            with pytest.raises(RetrievalError, match="empty"):
                empty_search_port.configured(SearchOptions(mode=mode)).search("anything", 5)


class DocumentChunksContract:
    """Contract of the DocumentChunksPort (rag_core.ports): a document's chunks, which the expansion and merge stages
    grow blocks from. Mixed into a `SearchPortContract` subclass (its `search_port` fixture, over CORPUS); it may
    override `label` (the doc_id the port's hits carry for a CORPUS document) and `disable` (leave a chunk out of
    lookups, or bring it back, where the adapter's store can)."""

    def label(self, doc: str) -> str:
        return doc

    def disable(self, search_port, doc: str, index: int, disabled: bool) -> None:
        pytest.skip("this adapter's store cannot disable chunks")

    def test_a_document_s_chunks_in_order_as_its_hits_name_them(self, search_port) -> None:
        for doc, text in CORPUS.items():
            chunks = search_port.document_chunks(self.label(doc))
            assert [c.chunk_index for c in chunks] == list(range(len(chunks))) and chunks
            for c in chunks:
                assert c.doc_id == doc_id_of(c.metadata) == self.label(doc)
                assert chunk_index_of(c.metadata) == c.chunk_index
                assert text[c.metadata["start"]:c.metadata["end"]] == c.content  # the offsets the parents read
        assert len(search_port.document_chunks(self.label("lab/zebrafish.md"))) > 2

    def test_the_chunks_are_the_rows_its_searches_return(self, search_port) -> None:
        port = search_port.configured(SearchOptions(mode="dense"))
        for doc in ("lab/zebrafish.md", 'odd/x" or id != ".md', "zh/内存.md"):
            hits = port.search("anything at all", 1000, {"doc_id": self.label(doc)}).hits
            chunks = search_port.document_chunks(self.label(doc))
            assert sorted((chunk_index_of(h.metadata), h.id, h.content) for h in hits) == \
                [(c.chunk_index, c.id, c.content) for c in chunks]
            assert {h.metadata.get("version") for h in hits} == {c.version for c in chunks}

    def test_an_unknown_document_has_no_chunks(self, search_port) -> None:
        assert search_port.document_chunks(self.label("nope/missing.md")) == []
        assert search_port.document_chunks(INJECTION) == []
        assert search_port.document_chunks("") == []

    def test_a_disabled_chunk_is_left_out_until_enabled(self, search_port) -> None:
        doc = "lab/zebrafish.md"
        before = [c.chunk_index for c in search_port.document_chunks(self.label(doc))]
        self.disable(search_port, doc, 1, True)
        try:
            assert [c.chunk_index for c in search_port.document_chunks(self.label(doc))] == \
                [i for i in before if i != 1]
        finally:
            self.disable(search_port, doc, 1, False)
        assert [c.chunk_index for c in search_port.document_chunks(self.label(doc))] == before
