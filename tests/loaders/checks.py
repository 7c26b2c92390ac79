"""What every format's test checks on a loaded document: chunks are exact slices of the text, no longer than
the size, and each knows the places (pages, slides, rows) whose text it holds."""

from __future__ import annotations

from rag_core.chunking import chunk_document
from rag_core.records import Chunk, Document


def chunks_of(doc: Document, max_size: int = 800, overlap: int = 100) -> list[Chunk]:
    chunks = chunk_document(doc, max_size, overlap)
    assert chunks
    ends = [p.offset for p in doc.places[1:]] + [len(doc.text)]
    for c in chunks:
        assert doc.text[c.start:c.end] == c.text
        assert len(c.text) <= max_size
        held = {p.number for p, end in zip(doc.places, ends) if p.offset < c.end and end > c.start}
        if not held:
            assert c.location is None
        else:
            assert c.location is not None and (c.location.first, c.location.last) == (min(held), max(held)), c
    return chunks
