"""The expansion stage with chunk edits (kb.chunk_edits) on a real store: blocks are stitched from the chunks as
they are now, so an edit shows, a disabled chunk stops the growth and is never shown, an added chunk stands alone,
a re-upload changes the block, and a hit found before a re-index is not grown."""

from __future__ import annotations

import pytest

from rag_core.ingest import Ingestor
from rag_core.kb.chunk_edits import add_chunk, conflicts, edit_chunk, set_disabled
from rag_core.retrieval import KnowledgeRetriever, SearchOptions, StoreSearchPort
from rag_core.retrieval.expand import ExpandParams
from rag_core.store.memory import InMemoryChunkStore
from tests.retrieval.memory import TrigramEmbedder

BM25 = SearchOptions(mode="bm25")
DOC = "pumps.md"


def paragraph(i: int, extra: str = "") -> str:
    return f"Paragraph {i} is about the filter pump of tank number {i}.{extra}"


def text(**extra: str) -> str:
    """Seven paragraphs, one chunk each (size 80, no overlap); paragraph i gets `extra[f"p{i}"]` at its end."""
    return "\n\n".join(paragraph(i, extra.get(f"p{i}", "")) for i in range(7))


@pytest.fixture
def kb():
    embedder = TrigramEmbedder()
    store = InMemoryChunkStore()
    store.open(embedder.name, embedder.dim)
    ingestor = Ingestor(store, embedder, max_size=80, overlap=0)
    [report] = ingestor.ingest_uploads([(DOC, text(p3=" zeta").encode())])
    assert report.status == "added" and len(store.get_chunks(DOC)) == 7
    return store, embedder, ingestor


def retriever(store, embedder) -> KnowledgeRetriever:
    return KnowledgeRetriever(StoreSearchPort(store, embedder, BM25))


def grown(store, embedder, query: str = "zeta", neighbours: int = 2):
    result = retriever(store, embedder).lookup(query, search=BM25, return_n=1, expand=ExpandParams("neighbours",
                                                                                                   neighbours))
    [block] = result.blocks
    return block


def test_a_block_grows_over_the_chunks_as_they_are(kb) -> None:
    store, embedder, _ = kb
    block = grown(store, embedder)
    assert (block.first, block.last, block.before, block.stopped) == (1, 5, (3, 3), "")
    assert block.content == "\n\n".join(paragraph(i, " zeta" if i == 3 else "") for i in range(1, 6))


def test_an_edited_neighbour_shows_its_new_text(kb) -> None:
    store, embedder, _ = kb
    edit_chunk(store, embedder, f"{DOC}#chunk-4", text="The pump of tank 4 was replaced in March.")
    block = grown(store, embedder)
    assert (block.first, block.last) == (1, 5)
    assert "The pump of tank 4 was replaced in March." in block.content and paragraph(4) not in block.content
    assert "zeta\n\nThe pump of tank 4 was replaced in March.\n\nParagraph 5" in block.content


def test_an_edited_hit_is_highlighted_as_edited(kb) -> None:
    store, embedder, _ = kb
    edit_chunk(store, embedder, f"{DOC}#chunk-3", text="Tank 3 has a new zeta pump.")
    block = grown(store, embedder)
    [(a, b)] = block.highlights
    assert block.content[a:b] == "Tank 3 has a new zeta pump." and (block.first, block.last) == (1, 5)


def test_a_disabled_chunk_stops_the_growth_and_is_never_shown(kb) -> None:
    store, embedder, _ = kb
    set_disabled(store, f"{DOC}#chunk-4", True)
    block = grown(store, embedder)
    assert (block.first, block.last, block.stopped) == (1, 3, "disabled")
    assert paragraph(4) not in block.content and paragraph(5) not in block.content
    set_disabled(store, f"{DOC}#chunk-2", True)
    block = grown(store, embedder)
    assert (block.first, block.last, block.stopped) == (3, 3, "disabled") and block.content == paragraph(3, " zeta")


def test_an_added_chunk_stands_alone(kb) -> None:
    store, embedder, _ = kb
    added = add_chunk(store, embedder, DOC, "An added note: the omega valve of tank 6 leaks.")
    assert added["evidence_key"] == f"{DOC}#chunk-7"
    block = grown(store, embedder, "omega valve")
    assert (block.key, block.first, block.last, block.stopped) == (f"{DOC}#chunk-7", 7, 7, "added")
    assert block.content == "An added note: the omega valve of tank 6 leaks." and block.start is None
    near = grown(store, embedder, "zeta", neighbours=6)  # the last chunk of the text does not grow into it
    assert (near.first, near.last) == (0, 6)


def test_a_re_upload_that_changes_the_section_changes_the_block(kb) -> None:
    store, embedder, ingestor = kb
    edit_chunk(store, embedder, f"{DOC}#chunk-4", text="An edit of paragraph 4.")
    edit_chunk(store, embedder, f"{DOC}#chunk-2", text="An edit of paragraph 2.")
    [report] = ingestor.ingest_uploads([(DOC, text(p3=" zeta", p4=" Audited.").encode())])
    assert report.status == "replaced"
    # chunk 2's text is the same again: its edit is re-applied; chunk 4's changed: its edit is in conflict
    assert [c["evidence_key"] for c in conflicts(store, DOC)] == [f"{DOC}#chunk-4"]
    block = grown(store, embedder)
    assert paragraph(4, " Audited.") in block.content and (block.first, block.last) == (1, 5)
    assert "An edit of paragraph 2." in block.content and "An edit of paragraph 4." not in block.content


def test_a_hit_found_before_a_re_index_is_not_grown(kb) -> None:
    store, embedder, ingestor = kb
    kr = retriever(store, embedder)
    params = kr.params(search=BM25, return_n=1, expand=ExpandParams("neighbours", 2))
    fetched = kr.fetch("zeta", params)
    ingestor.ingest_uploads([(DOC, text(p3=" zeta", p5=" Changed.").encode())])
    [block] = kr.assemble(fetched, params).blocks
    assert (block.first, block.last, block.stopped) == (3, 3, "changed")
    assert block.content == paragraph(3, " zeta")  # the hit as it was found


def test_parents_read_the_headings_as_they_are_now(kb) -> None:
    store, embedder, ingestor = kb
    doc = "# Pumps\n\n" + "\n\n".join(paragraph(i) for i in range(3)) + "\n\n# Valves\n\n" + \
        "\n\n".join(paragraph(i, " zeta" if i == 4 else "") for i in range(3, 6))
    ingestor.ingest_uploads([(DOC, doc.encode())])
    result = retriever(store, embedder).lookup("zeta", search=BM25, return_n=1, expand=ExpandParams("parent"))
    [block] = result.blocks
    assert block.section == "Valves" and block.content.startswith("# Valves") and block.stopped == ""
    assert block.content.endswith(paragraph(5)) and "Pumps" not in block.content
