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


def tags_editor(wb: Workbench, doc_ids: Sequence[str]) -> None:
    """A document's metadata (folder, type, ingest time, front matter, tags) and a box to set its tags: the same
    rules as `python -m rag_core tag DOC key=value` (rag_core.kb.tags)."""
    from rag_core.errors import RagError
    from rag_core.kb.tags import metadata, tag

    with st.expander("Metadata and tags (for filtered search)", expanded=False):
        doc_id = st.selectbox("Document", doc_ids, key="kb.tag_doc")
        if not doc_id:
            return
        labels = metadata(wb.store).get(doc_id, {})
        st.markdown(" · ".join(f"`{key}={value}`" for key, values in labels.items() for value in values))
        given = st.text_input("Tags to set (space-separated key=value; key= removes one)", key="kb.tag_text",
                              placeholder="team=sre tier=1")
        if st.button("Set tags", key="kb.tag_set", disabled=not given.strip()):
            try:
                tags = tag(wb.store, doc_id, given.split())
            except RagError as exc:
                st.error(str(exc), icon="🛑")
            else:
                st.success(f"{doc_id}: tags " + (", ".join(f"{k}={'|'.join(v)}" for k, v in tags.items()) or "none"))
