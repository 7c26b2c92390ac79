"""Parent sections from the headings of Markdown, HTML, DOCX and PDF (its outline): real files ingested with the
local embedder, looked up through KnowledgeRetriever over StoreSearchPort with `expand="parent"`; each block holds
exactly the chunks of the section its hit is in, a section longer than `chunk.parent-max-size` splits at its
sub-headings and then into windows of whole chunks, and a chunk longer than the limit is its own parent."""

from __future__ import annotations

import io

import pytest

from rag_core.ingest import Ingestor
from rag_core.records import StoredChunk
from rag_core.retrieval import KnowledgeRetriever, SearchOptions, StoreSearchPort
from rag_core.retrieval.expand import ExpandParams
from rag_core.store.memory import InMemoryChunkStore
from tests.loaders.samples import outlined_pdf

BM25 = SearchOptions(mode="bm25")
GATEWAY, RESTART, KEYS, EMERGENCY, DISK = ("Payment gateway", "Restarting the workers", "Rotating keys",
                                           "Emergency rotation", "Disk space")


def _para(topic: str, n: int, mark: str = "") -> str:
    return (f"{topic} note {n}: the on-call engineer reads the runbook, checks the dashboards and writes down what "
            f"was done{mark}.")


# (depth, heading) or (0, paragraph): the manual every format holds
OUTLINE: tuple[tuple[int, str], ...] = (
    (1, GATEWAY), (0, _para("Gateway", 0)),
    (2, RESTART), *((0, _para("Restart", n)) for n in range(3)),
    (2, KEYS), (0, _para("Keys", 0)), (0, _para("Keys", 1, " zeta")), (0, _para("Keys", 2)),
    (3, EMERGENCY), (0, _para("Emergency", 0)), (0, _para("Emergency", 1, " omega")),
    (1, DISK), (0, _para("Disk", 0)), (0, _para("Disk", 1)),
)


def markdown() -> bytes:
    return "\n\n".join("#" * d + " " + t if d else t for d, t in OUTLINE).encode()


def html() -> bytes:
    body = "".join(f"<h{d}>{t}</h{d}>" if d else f"<p>{t}</p>" for d, t in OUTLINE)  # h1, h2, h3
    return f"<html><body>{body}</body></html>".encode()


def docx() -> bytes:
    import docx as python_docx

    doc = python_docx.Document()
    for depth, line in OUTLINE:
        doc.add_heading(line, depth) if depth else doc.add_paragraph(line)
    buf = io.BytesIO()
    doc.save(buf)
    return buf.getvalue()


def pdf() -> bytes:
    page = 1
    lines = []
    for depth, line in OUTLINE:
        page += depth == 1 and bool(lines)  # each chapter on its page
        lines.append((page, depth, line))
    return outlined_pdf(lines)


FILES = {"manual.md": markdown, "manual.html": html, "manual.docx": docx, "manual.pdf": pdf}


@pytest.fixture(scope="module")
def store(local_embedder):
    store = InMemoryChunkStore()
    store.open(local_embedder.name, local_embedder.dim)
    reports = Ingestor(store, local_embedder, max_size=200, overlap=0).ingest_uploads(
        [(name, make()) for name, make in FILES.items()])
    assert [r.status for r in reports] == ["added"] * len(FILES), reports
    return store


def chunks(store, doc: str) -> list[StoredChunk]:
    found = sorted(store.get_chunks(doc), key=lambda c: c.chunk_index)
    assert len(found) == 11  # a chunk per paragraph
    return found


def path(chunk: StoredChunk) -> tuple[str, ...]:
    return tuple(str(chunk.metadata.get("headingPath") or "").split(" > "))


def section(store, doc: str, *heading: str, own: bool = False) -> tuple[int, int]:
    """The first and last chunk index under `heading` (own: without its sub-sections), checked contiguous."""
    held = [c.chunk_index for c in chunks(store, doc)
            if (path(c) == heading if own else path(c)[:len(heading)] == heading)]
    assert held and held == list(range(held[0], held[-1] + 1))
    return held[0], held[-1]


def block(store, embedder, doc: str, query: str, max_size: int = 4000):
    port = StoreSearchPort(store, embedder, BM25)
    result = KnowledgeRetriever(port).lookup(query, search=BM25, return_n=1, filters={"doc_id": doc},
                                             expand=ExpandParams("parent", parent_max_size=max_size))
    [found] = result.blocks
    return found


@pytest.mark.parametrize("doc", FILES)
def test_every_format_has_the_manual_s_sections(store, doc: str) -> None:
    paths = {path(c) for c in chunks(store, doc)}
    assert {(GATEWAY,), (GATEWAY, RESTART), (GATEWAY, KEYS), (GATEWAY, KEYS, EMERGENCY), (DISK,)} <= paths


@pytest.mark.parametrize("doc", FILES)
def test_a_block_is_the_section_its_hit_is_in(store, local_embedder, doc: str) -> None:
    inner = block(store, local_embedder, doc, "omega")
    assert (inner.first, inner.last) == section(store, doc, GATEWAY, KEYS, EMERGENCY)
    assert inner.section == f"{GATEWAY} > {KEYS} > {EMERGENCY}" and inner.stopped == "" and inner.grew == "parent"
    outer = block(store, local_embedder, doc, "zeta")  # its section holds its sub-section
    assert (outer.first, outer.last) == section(store, doc, GATEWAY, KEYS)
    assert outer.section == f"{GATEWAY} > {KEYS}" and "omega" in outer.content and "Restart note" not in outer.content
    [(a, b)] = outer.highlights
    assert "zeta" in outer.content[a:b]


@pytest.mark.parametrize("doc", FILES)
def test_a_section_longer_than_the_limit_splits_at_its_sub_headings_then_into_windows(store, local_embedder,
                                                                                     doc: str) -> None:
    rows = {c.chunk_index: c for c in chunks(store, doc)}
    whole, own = section(store, doc, GATEWAY, KEYS), section(store, doc, GATEWAY, KEYS, own=True)
    size = lambda lo, hi: rows[hi].metadata["end"] - rows[lo].metadata["start"]  # noqa: E731
    limit = size(*own)  # the section's own text fits, with its sub-section it does not
    assert size(*whole) > limit
    got = block(store, local_embedder, doc, "zeta", limit)
    assert (got.first, got.last) == own and "omega" not in got.content
    limit = size(own[0], own[0] + 1)  # the own text does not fit either: windows of whole chunks
    got = block(store, local_embedder, doc, "zeta", limit)
    assert own[0] <= got.first <= got.last <= own[1] and (got.first, got.last) != own
    assert got.first < got.last or size(got.first, got.first + 1) > limit
    assert size(got.first, got.last) <= limit and "zeta" in got.content


@pytest.mark.parametrize("doc", FILES)
def test_a_chunk_longer_than_the_limit_is_its_own_parent(store, local_embedder, doc: str) -> None:
    got = block(store, local_embedder, doc, "zeta", 20)
    assert got.first == got.last and got.key == f"{doc}#chunk-{got.first}" and not got.grown
    assert "zeta" in got.content
