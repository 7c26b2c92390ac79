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
