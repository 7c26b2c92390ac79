"""A Q&A sheet is searched by its questions alone (issue 25): in Milvus Lite with the local embedder, a pair's
stored vector is its question's, its BM25 text its question folded; the hit still holds the whole pair; an edit
and a reindex keep it so; a long answer's every chunk is searched by the question."""

from __future__ import annotations

import numpy as np
import pytest

from rag_core.chunking import chunk_document
from rag_core.ingest import Ingestor
from rag_core.kb.chunk_edits import edit_chunk
from rag_core.loaders import load_bytes
from rag_core.store.memory import InMemoryChunkStore
from rag_core.text import fold
from tests.helpers import make_workbench
from ui.html import ChunkView, chunk_card_html

pytestmark = pytest.mark.milvus

ROTATE = "How do I rotate the API keys?"
FAQ = ("question,answer,owner\n"
       f"{ROTATE},Open the vault console and press zebrafrob to revoke the old credential.,security\n"
       "Where are the backups kept?,In the glacier bucket every night.,platform\n"
       f"Why is the export slow?,{'The export walks every partition in turn before it writes. ' * 30}\n")


def rows(wb, doc_id: str) -> list[dict]:
    found = wb.store.client.query(wb.store.collection, filter=f'doc_id == "{doc_id}"',
                                  output_fields=["chunk_index", "content", "metadata", "vector", "bm25_text"],
                                  consistency_level="Strong")
    return sorted(found, key=lambda r: r["chunk_index"])


def cosine(a, b) -> float:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


@pytest.fixture(scope="module")
def wb(tmp_path_factory: pytest.TempPathFactory, local_embedder):
    workbench = make_workbench(tmp_path_factory.mktemp("qa") / "data", embedder=local_embedder)
    [report] = workbench.ingestor.ingest_uploads([("faq.csv", FAQ.encode())])
    assert report.status == "added", report
    yield workbench
    workbench.close()


def test_the_question_alone_is_searched_and_the_pair_returned(wb) -> None:
    assert wb.store.search_bm25("vault console zebrafrob credential", 5) == []  # the answer's words only
    [hit, *_] = wb.store.search_bm25("rotate API keys", 5)
    assert hit.content.startswith(f"# Q: {ROTATE}") and "press zebrafrob" in hit.content and "security" in hit.content
    first = rows(wb, "faq.csv")[0]
    assert first["metadata"]["searchText"] == ROTATE and first["bm25_text"] == fold(ROTATE)
    assert cosine(first["vector"], wb.embedder.embed_documents([ROTATE])[0]) > 0.9999
    assert cosine(first["vector"], wb.embedder.embed_documents([first["content"]])[0]) < 0.999
    evidence = wb.retriever.lookup(ROTATE, return_n=3).to_dict()["evidence"][0]
    assert "press zebrafrob" in evidence["content"] and evidence["searched_by"] == ROTATE


def test_a_long_answer_is_searched_by_its_question_in_every_chunk(wb) -> None:
    slow = [r for r in rows(wb, "faq.csv") if r["metadata"]["title"] == "Q: Why is the export slow?"]
    assert len(slow) > 1 and not slow[1]["content"].startswith("#")
    assert {r["bm25_text"] for r in slow} == {fold("Why is the export slow?")}
    assert wb.store.search_bm25("partition writes", 5) == []


def test_an_edited_pair_is_searched_by_its_edited_question_and_a_reindex_keeps_it(wb) -> None:
    edit_chunk(wb.store, wb.embedder, "faq.csv#chunk-0", keywords=["keyroll"],
               text="# Q: How do I renew the API keys?\nA: Open the vault console and press zebrafrob.")
    first = rows(wb, "faq.csv")[0]
    searched = "How do I renew the API keys?\n\nKeywords: keyroll"
    assert first["metadata"]["searchText"] == "How do I renew the API keys?" and first["bm25_text"] == fold(searched)
    assert cosine(first["vector"], wb.embedder.embed_documents([searched])[0]) > 0.9999
    assert [h.content for h in wb.store.search_bm25("renew keyroll", 5)] == [first["content"]]
    assert wb.store.search_bm25("zebrafrob", 5) == [] and wb.store.search_bm25("rotate", 5) == []
    [report] = wb.ingestor.reindex(["faq.csv"])
    assert report.status == "replaced", report
    again = rows(wb, "faq.csv")
    assert again[0]["content"] == first["content"] and again[0]["bm25_text"] == fold(searched)
    assert again[1]["bm25_text"] == fold("Where are the backups kept?")
    assert wb.store.search_bm25("glacier bucket", 5) == []


def test_the_in_memory_store_searches_a_pair_by_its_question_too(local_embedder) -> None:
    store = InMemoryChunkStore()
    store.open(local_embedder.name, local_embedder.dim)
    [report] = Ingestor(store, local_embedder).ingest_uploads([("faq.csv", FAQ.encode())])
    assert report.status == "added", report
    assert store.search_bm25("vault console zebrafrob credential", 5) == []
    assert "press zebrafrob" in store.search_bm25("rotate API keys", 5)[0].content


def test_the_chunk_card_says_a_pair_is_searched_by_its_question() -> None:
    doc = load_bytes(FAQ.encode(), "faq.csv")
    chunks = chunk_document(doc)
    assert [c.search_text for c in chunks[:2]] == [ROTATE, "Where are the backups kept?"]
    assert "searched by its question" in chunk_card_html(ChunkView.of(chunks[0]))
    plain = chunk_document(load_bytes(b"name,team\nalpha,ops\n", "teams.csv"))
    assert plain[0].search_text == "" and "searched by" not in chunk_card_html(ChunkView.of(plain[0]))
