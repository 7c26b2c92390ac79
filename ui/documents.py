"""Reading an indexed document's text back for the chunk preview."""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from rag_core import loaders
from rag_core.bootstrap import Workbench
from rag_core.records import StoredChunk


@st.cache_data(max_entries=16, show_spinner=False)
def decode(data: bytes, name: str, max_bytes: int) -> tuple[str, str]:
    """(text, encoding) of a file's bytes, exactly as ingestion reads them. Raises LoaderError."""
    doc = loaders.load_bytes(data, name, max_bytes=max_bytes)
    return doc.text, doc.encoding


def text_from_chunks(chunks: Sequence[StoredChunk]) -> str:
    """An indexed document's text rebuilt from its stored chunks (offsets are in their metadata). The
    whitespace between chunks is not stored; newlines stand in for it, so headings stay at line starts."""
    placed = [(c.metadata["start"], c.content) for c in chunks if c.metadata.get("start") is not None]
    end = max((start + len(text) for start, text in placed), default=0)
    buf = ["\n"] * end
    for start, text in placed:
        buf[start:start + len(text)] = text
    return "".join(buf)


def indexed_text(wb: Workbench, doc_id: str) -> tuple[str, str]:
    """(text, note) of an indexed document: from its kept original, else rebuilt from its chunks."""
    original = wb.ingestor.original(doc_id)
    if original is not None:
        return decode(original, doc_id, wb.ingestor.max_bytes)[0], ""
    return (text_from_chunks(wb.store.get_chunks(doc_id)),
            "The original file was not kept; the text is rebuilt from the stored chunks.")
