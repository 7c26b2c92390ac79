"""Disabling and enabling chunks by evidence key (`doc_id#chunk-N`), the same rules for the CLI (`chunks ...`), the
API (`PATCH /v1/documents/{doc_id}/chunks/{n}`) and the pages; the record is kept by the store (store.edits)."""

from __future__ import annotations

from typing import Any

from ..errors import NotIndexed, RetrievalError
from ..retrieval.explain import parse_expect


def chunk_of(store: Any, key: str) -> Any:
    """The stored chunk an evidence key names; NotIndexed / RetrievalError saying what is missing."""
    expect = parse_expect(key)
    if expect.chunk_index is None:
        raise RetrievalError(f"{key!r} is not an evidence key: name a chunk as DOC_ID#chunk-N.")
    chunks = store.get_chunks(expect.doc_id)
    if not chunks:
        raise NotIndexed(f"No document {expect.doc_id!r} in the knowledge base (`docs` lists them).")
    found = next((c for c in chunks if c.chunk_index == expect.chunk_index), None)
    if found is None:
        raise RetrievalError(f"{expect.doc_id} has chunks 0 to {max(c.chunk_index for c in chunks)}; there is no "
                             f"chunk-{expect.chunk_index}.")
    return found


def set_disabled(store: Any, key: str, disabled: bool, who: str = "local") -> dict[str, Any]:
    """Leave the chunk out of every lookup (or bring it back). Returns its record with its history."""
    chunk = chunk_of(store, key)
    key = f"{chunk.doc_id}#chunk-{chunk.chunk_index}"
    entry = store.edits.set_disabled(key, doc_id=chunk.doc_id, version=chunk.version,
                                     chunk_hash=str(chunk.metadata.get("chunkHash", "")), disabled=disabled, who=who)
    return {"evidence_key": key, **entry}


def history(store: Any, key: str) -> dict[str, Any]:
    chunk = chunk_of(store, key)
    key = f"{chunk.doc_id}#chunk-{chunk.chunk_index}"
    off = store.edits.disabled()
    return {"evidence_key": key, "disabled": off.get(key) in ("", chunk.metadata.get("chunkHash")) if key in off
            else False, "history": store.edits.history(key), "content": chunk.content}


def embedded_text(text: str, keywords: list[str], questions: list[str]) -> str:
    """What an edited chunk holds, searches (BM25) and embeds: its text, then its keywords and example questions
    (so they are shown with the hit too)."""
    parts = [text.rstrip()]
    if keywords:
        parts.append("Keywords: " + ", ".join(keywords))
    if questions:
        parts.append("Questions: " + " ".join(questions))
    return "\n\n".join(parts)


def _apply(store: Any, embedder: Any, chunk: Any, entry: dict[str, Any], original: str) -> None:
    """Write `entry`'s edit onto the stored `chunk` (re-embedding only that chunk; its evidence key stays)."""
    content = embedded_text(entry.get("text") or original, entry.get("keywords") or [], entry.get("questions") or [])
    vector = embedder.embed_documents([content])[0]
    metadata = {**chunk.metadata, "edited": True, "keywords": entry.get("keywords") or [],
                "questions": entry.get("questions") or [], "originalText": original}
    store.rewrite_chunk(chunk.id, content, vector, metadata)


def edit_chunk(store: Any, embedder: Any, key: str, *, text: str | None = None, keywords: list[str] | None = None,
               questions: list[str] | None = None, who: str = "local") -> dict[str, Any]:
    """Edit a chunk's text and/or set its keywords and example questions; only this chunk is re-embedded and its
    evidence key stays. Raises RetrievalError for an empty text or nothing to change."""
    if text is not None and not text.strip():
        raise RetrievalError("The chunk text is empty: disable the chunk instead (`chunks disable KEY`).")
    if text is None and keywords is None and questions is None:
        raise RetrievalError("Nothing to change: give the new text, keywords or questions.")
    clean = [[v.strip() for v in values if v.strip()] if values is not None else None
             for values in (keywords, questions)]
    chunk = chunk_of(store, key)
    key = f"{chunk.doc_id}#chunk-{chunk.chunk_index}"
    original = str(chunk.metadata.get("originalText") or chunk.content)
    entry = store.edits.set_content(key, doc_id=chunk.doc_id, version=chunk.version,
                                    chunk_hash=str(chunk.metadata.get("chunkHash", "")), text=text,
                                    keywords=clean[0], questions=clean[1], who=who)
    _apply(store, embedder, chunk, entry, original)
    return {"evidence_key": key, **entry}


def reapply(store: Any, embedder: Any, doc_ids: Any) -> list[str]:
    """After new versions of `doc_ids` were written: the content edits whose chunk holds the same text again
    (re-index, re-upload of an unchanged original, a copy) are written onto it. Returns their keys."""
    applied = []
    wanted = set(doc_ids)
    edits = {k: e for k, e in store.edits.all().items()
             if e.get("doc_id") in wanted and any(e.get(n) for n in ("text", "keywords", "questions"))}
    for doc_id in sorted({e["doc_id"] for e in edits.values()}):
        for chunk in store.get_chunks(doc_id):
            entry = edits.get(f"{doc_id}#chunk-{chunk.chunk_index}")
            if entry is not None and entry.get("hash") == chunk.metadata.get("chunkHash"):
                _apply(store, embedder, chunk, entry, chunk.content)
                applied.append(f"{doc_id}#chunk-{chunk.chunk_index}")
    return applied


def revert(store: Any, embedder: Any, key: str, who: str = "local") -> dict[str, Any]:
    """Back to the original text, without keywords or questions (re-embedded); the history keeps the edits."""
    chunk = chunk_of(store, key)
    key = f"{chunk.doc_id}#chunk-{chunk.chunk_index}"
    store.edits.revert(key, who)
    original = chunk.metadata.get("originalText")
    if original:
        metadata = {k: v for k, v in chunk.metadata.items()
                    if k not in ("edited", "keywords", "questions", "originalText")}
        store.rewrite_chunk(chunk.id, str(original), embedder.embed_documents([str(original)])[0], metadata)
    return history(store, key)
