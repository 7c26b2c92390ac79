"""Reading an indexed document's text back for the chunk preview; a document's tags and chunks to edit, add, or settle
after a re-upload."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import streamlit as st

from rag_core import loaders
from rag_core.access.records import Role
from rag_core.bootstrap import Workbench
from rag_core.records import PAGE, ROW, SLIDE, Document, StoredChunk

from .access import allowed, gate, record, who
from .errors import show_error
from .i18n import N_, t, tn
from .reasons import notes


@st.cache_data(max_entries=16, show_spinner=False)
def decode(data: bytes, name: str, max_bytes: int, options: loaders.LoadOptions | None = None,
           _on_page: Callable[[int, int], None] | None = None) -> Document:
    """The document in a file's bytes, exactly as ingestion reads it (pages, slides, rows, OCR'd pages, notes).
    Cached: a slider's change re-chunks the document without reading it again (OCR takes seconds per page).
    `_on_page` (not part of the cache key): OCR progress. Raises LoaderError."""
    options = replace(options or loaders.LoadOptions(), on_page=_on_page)
    return loaders.load_bytes(data, name, max_bytes=max_bytes, options=options)


def structure(doc: Document) -> list[str]:
    """What a person should know about how a document was read: its pages, slides or sheets, the pages read by
    OCR, and the loader's notes ("Q&A sheet: FAQ ...")."""
    units: dict[str, set[Any]] = {}
    for p in doc.places:
        units.setdefault(p.unit, set()).add(p.sheet if p.unit == ROW else p.number)
    lines = []
    if PAGE in units:
        lines.append(tn("{n} page with text", "{n} pages with text", len(units[PAGE])))
    if SLIDE in units:
        lines.append(tn("{n} slide", "{n} slides", len(units[SLIDE])))
    if ROW in units:  # each sheet (a CSV: one, unnamed) with the rows it was read from, as the spreadsheet numbers them
        spans: dict[str, list[int]] = {}
        for p in doc.places:
            spans.setdefault(p.sheet, []).append(p.number)
        lines.append(", ".join(t("sheet {sheet} (rows {first}–{last})", sheet=s, first=min(n), last=max(n)) if s
                               else t("(rows {first}–{last})", first=min(n), last=max(n)) for s, n in spans.items()))
    return lines + notes(doc)  # the loader's notes name the OCR'd pages


def text_from_chunks(chunks: Sequence[StoredChunk]) -> str:
    """An indexed document's text rebuilt from its stored chunks (offsets are in their metadata). The
    whitespace between chunks is not stored; newlines stand in for it, so headings stay at line starts."""
    placed = [(c.metadata["start"], c.content) for c in chunks if c.metadata.get("start") is not None]
    end = max((start + len(text) for start, text in placed), default=0)
    buf = ["\n"] * end
    for start, text in placed:
        buf[start:start + len(text)] = text
    return "".join(buf)


def indexed_text(wb: Workbench, doc_id: str,
                 on_page: Callable[[int, int], None] | None = None) -> tuple[str, str, Document | None]:
    """(text, note, document) of an indexed document: read from its kept original (the document, with its places),
    else rebuilt from its chunks (no document)."""
    original = wb.ingestor.original(doc_id)
    if original is not None:
        doc = decode(original, doc_id, wb.ingestor.max_bytes, wb.ingestor.load_options, on_page)
        return doc.text, "", doc
    return (text_from_chunks(wb.store.get_chunks(doc_id)),
            t("The original file was not kept; the text is rebuilt from the stored chunks."), None)


def tags_editor(wb: Workbench, doc_ids: Sequence[str]) -> None:
    """A document's metadata (folder, type, ingest time, front matter, tags) and a box to set its tags: the same
    rules as `python -m rag_core tag DOC key=value` (rag_core.kb.tags)."""
    from rag_core.errors import RagError
    from rag_core.kb.tags import metadata, tag
    from rag_core.scope import split_terms

    with st.expander(t("Metadata and tags (for filtered search)"), expanded=False):
        doc_id = st.selectbox(t("Document"), doc_ids, key="kb.tag_doc")
        if not doc_id:
            return
        labels = metadata(wb.store).get(doc_id, {})
        st.markdown(" · ".join(f"`{key}={value}`" for key, values in labels.items() for value in values))
        if not gate(wb.settings.kb_name, Role.EDITOR):  # setting tags is an editor's
            return
        given = st.text_input(t("Tags to set (space-separated key=value, a value with spaces in quotes; key= "
                                "removes one)"), key="kb.tag_text",
                              placeholder="team=sre tier=1")  # i18n: ok (example tags)
        if st.button(t("Set tags"), key="kb.tag_set", disabled=not given.strip()):
            try:
                tags = tag(wb.store, doc_id, split_terms(given))
            except RagError as exc:
                show_error(exc)
            else:
                record("tags.set", wb.settings.kb_name, doc_id, tags={k: list(v) for k, v in tags.items()})
                st.success(t("{doc}: tags {tags}", doc=doc_id,
                             tags=", ".join(f"{k}={'|'.join(v)}" for k, v in tags.items()) or t("none")))


def chunk_editor(wb: Workbench, chunks: Sequence[Mapping[str, Any]], *, key: str) -> None:
    """Disable or enable one of `chunks` (dicts: evidence_key, content, disabled), or edit its text and keywords:
    the rules of `python -m rag_core chunks ...` (rag_core.kb.chunk_edits). The debugger's fetched hits are
    forgotten after a change, so its next lookup shows it."""
    from rag_core.errors import RagError
    from rag_core.kb.chunk_edits import edit_chunk, set_disabled

    if not gate(wb.settings.kb_name, Role.EDITOR):
        return
    st.caption(t("A disabled chunk is left out of every lookup (the agent's too) and shows in the debugger as a "
                 "drop with reason `disabled`; `python -m rag_core chunks history KEY` shows what was done to it."))
    if saved := st.session_state.pop(f"{key}.saved", None):  # what the last change did, shown after its rerun
        st.success(saved, icon="✅")
    by_key = {c["evidence_key"]: c for c in chunks}
    d1, d2 = st.columns([3, 1], vertical_alignment="bottom")
    chosen = d1.selectbox(t("Chunk"), list(by_key), key=f"{key}.edit_key")
    chunk = by_key.get(chosen) if chosen else None
    if chunk is None:
        return
    if d2.button(t("Enable") if chunk["disabled"] else t("Disable"), key=f"{key}.edit_toggle"):
        try:
            set_disabled(wb.store, chosen, not chunk["disabled"], who=who())
        except RagError as exc:
            show_error(exc)
        else:
            record("chunks.edit", wb.settings.kb_name, chosen, change="enable" if chunk["disabled"] else "disable")
            st.session_state["dbg.fetched"] = {}
            st.session_state[f"{key}.saved"] = (t("{key} is enabled again.", key=chosen) if chunk["disabled"] else
                                                t("{key} is disabled: every lookup leaves it out.", key=chosen))
            st.rerun()
    new_text = st.text_area(t("Text (only this chunk is re-embedded; its evidence key stays)"), chunk["content"],
                            key=f"{key}.edit_text.{chosen}", height=150)
    new_keywords = st.text_input(t("Keywords (comma-separated; they count for BM25 and the embedding)"),
                                 key=f"{key}.edit_keywords.{chosen}")
    if st.button(t("Save the edit"), key=f"{key}.edit_save"):
        try:
            edit_chunk(wb.store, wb.embedder, chosen, text=new_text if new_text != chunk["content"] else None,
                       keywords=[k for k in new_keywords.split(",") if k.strip()] if new_keywords.strip() else None,
                       who=who())
        except RagError as exc:
            show_error(exc)
        else:
            record("chunks.edit", wb.settings.kb_name, chosen, change="edit")
            st.session_state["dbg.fetched"] = {}  # the hits changed: the debugger searches again
            st.session_state[f"{key}.saved"] = t("Saved the edit of {key}: it was re-embedded and is searched as "
                                                 "edited.", key=chosen)
            st.rerun()


def document_chunk_editor(wb: Workbench, doc_ids: Sequence[str]) -> None:
    """A document's stored chunks on the Knowledge base page, each to disable, enable or edit (`chunk_editor`), a
    chunk to add to it (`chunks add DOC_ID --text ...`) and its edits in conflict after a re-upload."""
    from rag_core.identity import stored_chunks

    if not allowed(wb.settings.kb_name, Role.EDITOR):  # the page says which role it needs
        return
    with st.expander(t("A document's chunks: edit, disable, enable or add"), expanded=False):
        doc_id = st.selectbox(t("Document"), doc_ids, key="kb.chunks_doc")
        if not doc_id:
            return
        rows = wb.store.get_chunks(doc_id)
        off = wb.store.disabled_keys(rows)
        chunks = [{**c, "disabled": c["evidence_key"] in off} for c in stored_chunks(doc_id, rows)]
        chunk_editor(wb, chunks, key="kb")
        st.text_area(t("A chunk to add to this document (embedded and indexed under its next free chunk index)"),
                     key="kb.add_text", height=100)
        st.button(t("Add the chunk"), key="kb.add", on_click=_add_chunk, args=(wb, doc_id))
        if added := st.session_state.pop("kb.added", None):
            st.success(t("Added {key}.", key=added))
        if failed := st.session_state.pop("kb.add_error", None):
            show_error(failed)
        edit_conflicts(wb, [doc_id], key="kb.chunk_conflicts")


def _add_chunk(wb: Workbench, doc_id: str) -> None:
    """The Add button's callback (before the page runs, so the text box can be emptied)."""
    from rag_core.errors import RagError
    from rag_core.kb.chunk_edits import add_chunk

    try:
        added = add_chunk(wb.store, wb.embedder, doc_id, st.session_state.get("kb.add_text", ""),
                           who=who())
    except RagError as exc:
        st.session_state["kb.add_error"] = exc
        return
    record("chunks.edit", wb.settings.kb_name, added["evidence_key"], change="add")
    st.session_state["kb.added"] = added["evidence_key"]
    st.session_state["kb.add_text"] = ""
    st.session_state["dbg.fetched"] = {}  # the hits changed: the debugger searches again


CONFLICT_KINDS = {"added": N_("added"), "edited": N_("edited"), "disabled": N_("disabled")}  # chunk_edits.conflicts


def edit_conflicts(wb: Workbench, doc_ids: Sequence[str], *, key: str) -> None:
    """The edits of `doc_ids` a re-upload left in conflict, each to keep (re-applied to the chunk now under its key)
    or drop: the rules of `python -m rag_core chunks keep|drop KEY` (rag_core.kb.chunk_edits)."""
    from rag_core.errors import RagError
    from rag_core.kb.chunk_edits import conflicts, drop, keep

    if not allowed(wb.settings.kb_name, Role.EDITOR):  # settling them is an edit
        return
    for doc_id in doc_ids:
        try:
            found = conflicts(wb.store, doc_id)
        except RagError:  # deleted since
            continue
        if not found:
            continue
        st.warning(tn("{doc}: {n} chunk edit no longer matches the re-uploaded document. Keep it to re-apply it to "
                      "the chunk now under its key, or drop it.",
                      "{doc}: {n} chunk edits no longer match the re-uploaded document. Keep one to re-apply it to "
                      "the chunk now under its key, or drop it.", len(found), doc=doc_id), icon="✏️")
        for c in found:
            kind = t(CONFLICT_KINDS[c["kind"]]) if c["kind"] in CONFLICT_KINDS else c["kind"]
            what = kind + (f": {c['text'][:80]}" if c.get("text") else "")
            now = t("the chunk is gone") if c["now"] is None else t("now: {text}", text=" ".join(c["now"].split())[:80])
            left, keep_col, drop_col = st.columns([6, 1, 1], vertical_alignment="center")
            left.markdown(f"`{c['evidence_key']}` — {what} ({now})")
            chosen = [(keep, wb.embedder) if keep_col.button(t("Keep"), key=f"{key}.keep.{c['evidence_key']}")
                      else None, (drop, None) if drop_col.button(t("Drop"), key=f"{key}.drop.{c['evidence_key']}")
                      else None]
            for action in [a for a in chosen if a is not None]:
                try:
                    if action[1] is None:
                        drop(wb.store, c["evidence_key"], who=who())
                    else:
                        keep(wb.store, wb.embedder, c["evidence_key"], who=who())
                except RagError as exc:
                    show_error(exc)
                else:
                    record("chunks.edit", wb.settings.kb_name, c["evidence_key"],
                           change="drop" if action[1] is None else "keep")
                    st.session_state["dbg.fetched"] = {}
                    st.rerun()
