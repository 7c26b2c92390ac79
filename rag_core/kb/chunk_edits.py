"""Disabling, enabling, editing and adding chunks by evidence key (`doc_id#chunk-N`), and settling the edits a
re-upload left in conflict: the same rules for the CLI (`chunks ...`), the API (`PATCH` / `POST` under
`/v1/documents/{doc_id}/chunks`) and the pages; the record is kept by the store (store.edits).

A change that rewrites a chunk row goes through `store.edits.begin` (pending), the row write, then `finish`, inside
`store.editing()`: a process killed in between leaves the old chunk or the new one, and the record says which
(store.edits.recover). Every change runs under the knowledge base's lock (`store.edits.lock`, held across processes
sharing the data folder) from reading the chunk to recording the change, so two processes editing at once each
see the other's change, and the row and the record end as one of them left both."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from ..errors import NotIndexed, RetrievalError
from ..ports import EditableStore, Embedder, KeptOriginals
from ..records import StoredChunk, qa_question, search_text
from ..retrieval.explain import Expectation, parse_expect
from ..store.edits import ADDED, CONTENT, content_hash

EDIT_KEYS = ("edited", ADDED, "keywords", "questions", "originalText")  # what an edit puts in a row's metadata
# what a chunk of the document says of its place in it, which an added chunk does not have
PLACE_KEYS = ("start", "end", "overlapChars", "headingPath", "title", "location", "locationSpan", "searchText")


F = TypeVar("F", bound=Callable[..., Any])


def _locked(change: F) -> F:
    """`change(store, ...)` run holding the knowledge base's lock (see the module docstring)."""
    @functools.wraps(change)
    def run(store: EditableStore, *args: Any, **kwargs: Any) -> Any:
        with store.edits.lock():
            return change(store, *args, **kwargs)
    return run  # type: ignore[return-value]


def _key(doc_id: str, index: int) -> str:
    return f"{doc_id}#chunk-{index}"


def _one_chunk(key: str) -> Expectation:
    """The chunk an evidence key names; RetrievalError for a document or a block's range (`doc#chunk-3..5`, which
    search gives for merged hits: an edit is of one chunk)."""
    expect = parse_expect(key)
    if expect.chunk_index is None:
        raise RetrievalError(f"{key!r} is not an evidence key: name a chunk as DOC_ID#chunk-N.")
    if expect.several:
        raise RetrievalError(f"{key!r} names several chunks ({expect.chunk_index}..{expect.end}); give one, e.g. "
                             f"{_key(expect.doc_id, expect.chunk_index)}.")
    return expect


def chunk_of(store: EditableStore, key: str) -> StoredChunk:
    """The stored chunk an evidence key names; NotIndexed / RetrievalError saying what is missing."""
    expect = _one_chunk(key)
    assert expect.chunk_index is not None
    chunks = _chunks_of(store, expect.doc_id)
    found = next((c for c in chunks if c.chunk_index == expect.chunk_index), None)
    if found is None:
        raise RetrievalError(f"{expect.doc_id} has chunks {_ranges(c.chunk_index for c in chunks)}; there is no "
                             f"chunk-{expect.chunk_index}.")
    return found


def _chunks_of(store: EditableStore, doc_id: str) -> list[StoredChunk]:
    chunks = store.get_chunks(doc_id)
    if not chunks:
        raise NotIndexed(f"No document {doc_id!r} in the knowledge base (`docs` lists them).")
    return chunks


def _ranges(indexes: Iterable[int]) -> str:
    """"0 to 5" (and "0 to 5, 7" when an added chunk sits after a gap)."""
    runs: list[list[int]] = []
    for i in sorted(indexes):
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ", ".join(f"{a} to {b}" if b > a else str(a) for a, b in runs)


@_locked
def set_disabled(store: EditableStore, key: str, disabled: bool, who: str = "local") -> dict[str, Any]:
    """Leave the chunk out of every lookup (or bring it back). Returns its record with its history."""
    chunk = chunk_of(store, key)
    key = _key(chunk.doc_id, chunk.chunk_index)
    entry = store.edits.set_disabled(key, doc_id=chunk.doc_id, version=chunk.version,
                                     chunk_hash=str(chunk.metadata.get("chunkHash", "")), disabled=disabled, who=who)
    return {"evidence_key": key, **entry}


def history(store: EditableStore, key: str) -> dict[str, Any]:
    """A chunk's state, its history and its text; a chunk no longer in the document (an edit in conflict) by its
    record alone."""
    try:
        chunk = chunk_of(store, key)
    except RetrievalError:
        if key not in store.edits.all():
            raise
        entry = store.edits.all()[key]
        return {"evidence_key": key, "disabled": False, "added": False, "history": list(entry.get("history") or []),
                "content": None}
    key = _key(chunk.doc_id, chunk.chunk_index)
    off = store.edits.disabled()
    return {"evidence_key": key, "disabled": off.get(key) in ("", chunk.metadata.get("chunkHash")) if key in off
            else False, "added": bool(chunk.metadata.get(ADDED)), "history": store.edits.history(key),
            "content": chunk.content}


def embedded_text(text: str, keywords: list[str], questions: list[str]) -> str:
    """What an edited chunk holds, searches (BM25) and embeds: its text, then its keywords and example questions
    (so they are shown with the hit too)."""
    parts = [text.rstrip()]
    if keywords:
        parts.append("Keywords: " + ", ".join(keywords))
    if questions:
        parts.append("Questions: " + " ".join(questions))
    return "\n\n".join(parts)


def _row(entry: Mapping[str, Any], metadata: Mapping[str, Any], original: str) -> tuple[str, dict[str, Any]]:
    """The content and metadata of the chunk row `entry` makes of a chunk whose original text is `original` (an
    entry without text, keywords or questions: the original, exactly)."""
    base = {k: v for k, v in metadata.items() if k not in EDIT_KEYS}
    if not (entry.get(ADDED) or any(entry.get(n) for n in CONTENT)):
        return original, base
    content = embedded_text(entry.get("text") or original, entry.get("keywords") or [], entry.get("questions") or [])
    extra: dict[str, Any] = {"edited": True, "keywords": entry.get("keywords") or [],
                             "questions": entry.get("questions") or [], "originalText": original}
    if base.get("searchText"):  # a Q&A pair: searched by its question, as edited
        extra["searchText"] = qa_question(content, base)
    if entry.get(ADDED):
        extra[ADDED] = True
    return content, {**base, **extra}


@contextlib.contextmanager
def _pending(store: EditableStore, key: str, **begin: Any) -> Iterator[None]:
    """begin (pending) -> the block writes the row -> finish; a failure forgets the pending change."""
    with store.editing() as writer:
        store.edits.begin(key, writer=writer, **begin)
        try:
            yield
        except BaseException:
            store.edits.abort(key)
            raise
        store.edits.finish(key)


def _rewrite(store: EditableStore, embedder: Embedder, chunk: StoredChunk, changes: Mapping[str, Any], *, what: str,
             who: str, unset: Sequence[str] = (), rebase: bool = True) -> dict[str, Any]:
    """Make `changes` to the chunk's edit and rewrite its row from it (re-embedding only this chunk; its evidence
    key and row id stay)."""
    key = _key(chunk.doc_id, chunk.chunk_index)
    chunk_hash = str(chunk.metadata.get("chunkHash", ""))
    original = str(chunk.metadata.get("originalText") or chunk.content)
    staged = store.edits.staged(key, changes, unset, chunk_hash if rebase else None)
    _check_size(staged.get("text") or original, staged.get("keywords"), staged.get("questions"))
    content, metadata = _row(staged, chunk.metadata, original)
    vector = embedder.embed_documents([search_text(content, metadata)])[0]
    with _pending(store, key, doc_id=chunk.doc_id, version=chunk.version, chunk_hash=chunk_hash, changes=changes,
                  unset=unset, what=what, who=who, content=content, rebase=rebase):
        store.rewrite_chunk(chunk.id, content, vector, metadata)
    return {"evidence_key": key, **store.edits.all().get(key, {})}


# What a person may give an edited or added chunk. The whole row (text, keywords, questions) fits the collection's
# content field with room to spare, as ingest's chunks do.
MAX_CHUNK_CHARS = 65_000
LIMITS = {"keywords": (64, 200), "questions": (32, 500)}  # name -> (how many, characters each)


def _clean(values: list[str] | None, name: str) -> list[str] | None:
    """The values given, stripped and without empty ones; RetrievalError in one line past the limits (LIMITS)."""
    if values is None:
        return None
    most, chars = LIMITS[name]
    if len(values) > most:
        raise RetrievalError(f"{len(values)} {name}: a chunk takes at most {most}.")
    if long := next((v for v in values if len(v) > chars), None):
        raise RetrievalError(f"One of the {name} has {len(long)} characters: at most {chars} each.")
    return [v.strip() for v in values if v.strip()]


def _check_size(text: str | None, keywords: list[str] | None, questions: list[str] | None) -> None:
    """RetrievalError when the chunk's row would be longer than MAX_CHUNK_CHARS."""
    size = len(embedded_text(text or "", keywords or [], questions or []))
    if size > MAX_CHUNK_CHARS:
        raise RetrievalError(f"The chunk would hold {size} characters with its keywords and questions; a chunk holds "
                             f"at most {MAX_CHUNK_CHARS}.")


@_locked
def edit_chunk(store: EditableStore, embedder: Embedder, key: str, *, text: str | None = None,
               keywords: list[str] | None = None, questions: list[str] | None = None,
               who: str = "local") -> dict[str, Any]:
    """Edit a chunk's text and/or set its keywords and example questions; only this chunk is re-embedded and its
    evidence key stays. Raises RetrievalError for an empty text or nothing to change."""
    if text is not None and not text.strip():
        raise RetrievalError("The chunk text is empty: disable the chunk instead (`chunks disable KEY`).")
    if text is None and keywords is None and questions is None:
        raise RetrievalError("Nothing to change: give the new text, keywords or questions.")
    keywords, questions = _clean(keywords, "keywords"), _clean(questions, "questions")
    chunk = chunk_of(store, key)
    changes, what = store.edits.content_change(key, text=text, keywords=keywords, questions=questions)
    return _rewrite(store, embedder, chunk, changes, what=what, who=who)


def _next_index(store: EditableStore, doc_id: str, chunks: Sequence[StoredChunk]) -> int:
    """The next free chunk index: after the document's chunks and any key an edit of it was ever recorded under (so
    an added chunk never inherits another's history)."""
    used = [c.chunk_index for c in chunks]
    for key, entry in store.edits.all().items():
        if entry.get("doc_id") == doc_id and key.rsplit("#chunk-", 1)[-1].isdigit():
            used.append(int(key.rsplit("#chunk-", 1)[-1]))
    return max(used, default=-1) + 1


def _added_row(template: StoredChunk, index: int, entry: Mapping[str, Any]) -> tuple[StoredChunk, str]:
    """The row of a chunk added to `template`'s document version under `index`, from its edit `entry`."""
    text = str(entry["text"])
    metadata = {k: v for k, v in template.metadata.items() if k not in PLACE_KEYS and k not in EDIT_KEYS}
    metadata.update(chunkIndex=index, chunkHash=content_hash(text), title="", headingPath="")
    content, metadata = _row({**entry, ADDED: True}, metadata, text)
    chunk = StoredChunk(id="", doc_id=template.doc_id,  # the store gives it the id of its place in the version
                        chunk_index=index, content=content, source=template.source, title="",
                        version=template.version, metadata=metadata, labels=template.labels)
    return chunk, content


def _insert(store: EditableStore, embedder: Embedder, template: StoredChunk, index: int, entry: Mapping[str, Any],
            *, what: str, who: str, replaces: str = "") -> dict[str, Any]:
    """Write the added chunk `entry` under `index` (pending, the row, finish)."""
    key = _key(template.doc_id, index)
    row, content = _added_row(template, index, entry)
    vector = embedder.embed_documents([search_text(content, row.metadata)])[0]
    changes = {ADDED: True, **{n: entry[n] for n in CONTENT if entry.get(n) is not None}}
    with _pending(store, key, doc_id=template.doc_id, version=template.version,
                  chunk_hash=str(row.metadata["chunkHash"]), changes=changes, what=what, who=who, content=content,
                  replaces=replaces):
        store.add_chunk(row, vector)
    return {"evidence_key": key, **store.edits.all().get(key, {})}


@_locked
def add_chunk(store: EditableStore, embedder: Embedder, doc_id: str, text: str, *, keywords: list[str] | None = None,
              questions: list[str] | None = None, who: str = "local") -> dict[str, Any]:
    """Add a chunk with `text` (and keywords, example questions) to an indexed document, under the next free chunk
    index: embedded and indexed (BM25 too), marked `edited` and `added` in hits, kept like any edit. Raises
    RetrievalError for an empty text, NotIndexed for a document that is not indexed."""
    if not (text or "").strip():
        raise RetrievalError("The chunk text is empty: give the text of the chunk to add (--text).")
    words, asked = _clean(keywords, "keywords") or [], _clean(questions, "questions") or []
    _check_size(text.strip(), words, asked)
    entry = {"text": text.strip(), "keywords": words, "questions": asked}
    chunks = _chunks_of(store, doc_id)
    index = _next_index(store, doc_id, chunks)
    return _insert(store, embedder, chunks[0], index, entry, what="added", who=who)


@_locked
def reapply(store: EditableStore, embedder: Embedder, doc_ids: Iterable[str]) -> list[str]:
    """After new versions of `doc_ids` were written: the content edits whose chunk holds the same text again
    (re-index, re-upload of an unchanged original, a copy) are written onto it, and the added chunks whose key the
    document's own chunks leave free are added again. Returns their keys."""
    applied = []
    wanted = set(doc_ids)
    edits = {k: e for k, e in store.edits.all().items()
             if e.get("doc_id") in wanted and (e.get(ADDED) or any(e.get(n) for n in CONTENT))}
    for doc_id in sorted({e["doc_id"] for e in edits.values()}):
        chunks = store.get_chunks(doc_id)
        own = {c.chunk_index: c for c in chunks if not c.metadata.get(ADDED)}
        for key, entry in sorted(edits.items()):
            if entry["doc_id"] != doc_id:
                continue
            index = int(key.rsplit("#chunk-", 1)[-1])
            chunk = own.get(index)
            if entry.get(ADDED):
                if chunk is None and chunks and not any(c.chunk_index == index for c in chunks):
                    row, content = _added_row(chunks[0], index, entry)
                    store.add_chunk(row, embedder.embed_documents([search_text(content, row.metadata)])[0])
                    applied.append(key)
            elif chunk is not None and entry.get("hash") == chunk.metadata.get("chunkHash"):
                original = str(chunk.metadata.get("originalText") or chunk.content)  # applied already: same again
                content, metadata = _row(entry, chunk.metadata, original)
                store.rewrite_chunk(chunk.id, content, embedder.embed_documents([search_text(content, metadata)])[0],
                                    metadata)
                applied.append(key)
    return applied


def resume(store: EditableStore, embedder: Embedder) -> list[str]:
    """When a knowledge base opens: re-apply the edits a re-index killed after its commit left unapplied (marked by
    store.edits.mark_unapplied). Returns their keys."""
    edits = store.edits
    with edits.lock(wait=False) as free:  # a writer holding it (a re-index under way): done at a later open
        if not free or not (docs := edits.unapplied()):
            return []
        applied = reapply(store, embedder, docs)
        edits.mark_unapplied(docs, False)
    return applied


@_locked
def revert(store: EditableStore, embedder: Embedder, key: str, who: str = "local") -> dict[str, Any]:
    """Back to the original text, without keywords or questions (re-embedded); the history keeps the edits. An added
    chunk has no original: disable it instead."""
    chunk = chunk_of(store, key)
    if chunk.metadata.get(ADDED):
        raise RetrievalError(f"{_key(chunk.doc_id, chunk.chunk_index)} was added, it has no original to go back to: "
                             "disable it instead (`chunks disable KEY`).")
    _rewrite(store, embedder, chunk, {}, unset=CONTENT, what="reverted to the original", who=who)
    return history(store, key)


# ------------------------------------------------------------------------------ conflicts after a re-upload
def _own_hashes(chunks: Sequence[StoredChunk]) -> dict[str, str]:
    return {_key(c.doc_id, c.chunk_index): str(c.metadata.get("chunkHash", "")) for c in chunks
            if not c.metadata.get(ADDED)}


def conflicts(store: EditableStore, doc_id: str) -> list[dict[str, Any]]:
    """The edits of `doc_id` that stopped applying when a changed original was re-uploaded (store.edits.conflicts),
    each with what it did and the chunk now under its key (None: the document no longer has that chunk)."""
    chunks = _chunks_of(store, doc_id)
    by_key = {_key(c.doc_id, c.chunk_index): c for c in chunks}
    entries = store.edits.all()
    found = []
    for key in store.edits.conflicts(_own_hashes(chunks), doc_id):
        e = entries[key]
        kind = ADDED if e.get(ADDED) else "edited" if any(e.get(n) for n in CONTENT) else "disabled"
        now = by_key.get(key)
        found.append({"evidence_key": key, "kind": kind, "disabled": bool(e.get("disabled")),
                      **{n: e.get(n) for n in CONTENT}, "now": now.content if now is not None else None})
    return found


def _conflict(store: EditableStore, key: str) -> tuple[dict[str, Any], list[StoredChunk]]:
    expect = _one_chunk(key)
    assert expect.chunk_index is not None
    chunks = _chunks_of(store, expect.doc_id)
    key = _key(expect.doc_id, expect.chunk_index)
    if key not in store.edits.conflicts(_own_hashes(chunks), expect.doc_id):
        raise RetrievalError(f"{key} has no edit in conflict (`chunks conflicts {expect.doc_id}` lists them).")
    return {"key": key, **store.edits.all()[key]}, chunks


@_locked
def keep(store: EditableStore, embedder: Embedder, key: str, who: str = "local") -> dict[str, Any]:
    """Keep an edit in conflict: re-applied to the chunk now under its key (its text as the person wrote it, its
    keywords and questions, disabled as it was); an edit whose chunk is gone is added as a chunk with its text; an
    added chunk whose key the document now uses moves to the next free key. Recorded in the history."""
    entry, chunks = _conflict(store, key)
    key = entry.pop("key")
    doc_id, index = entry["doc_id"], int(key.rsplit("#chunk-", 1)[-1])
    now = next((c for c in chunks if c.chunk_index == index), None)
    content = {n: entry[n] for n in CONTENT if entry.get(n)}
    if entry.get(ADDED):  # the document's own chunks now reach its key: it moves after them
        new = _next_index(store, doc_id, chunks)
        return _insert(store, embedder, chunks[0], new, entry, what=f"kept after a re-upload: moved from {key}",
                       who=who, replaces=key)
    if now is None:
        if not entry.get("text"):
            raise RetrievalError(f"{doc_id} no longer has chunk-{index} and the edit has no text to add as a chunk: "
                                 f"drop it (`chunks drop {key}`).")
        return _insert(store, embedder, chunks[0], index, entry, what="kept after a re-upload: added (its chunk is "
                       "gone)", who=who)
    if content:  # (disabled too, if it was)
        return _rewrite(store, embedder, now, content, what="kept after a re-upload: re-applied", who=who,
                        rebase=False)
    return {"evidence_key": key, **store.edits.set_disabled(
        key, doc_id=doc_id, version=now.version, chunk_hash=str(now.metadata.get("chunkHash", "")), disabled=True,
        who=who, what="kept after a re-upload: disabled", rebase=False)}


@_locked
def drop(store: EditableStore, key: str, who: str = "local") -> dict[str, Any]:
    """Let an edit in conflict go: discarded from the edits (the chunk now under its key stays as the document
    has it), recorded in the history."""
    entry, _ = _conflict(store, key)
    key = entry["key"]
    return {"evidence_key": key, **store.edits.let_go(key, "dropped after a re-upload (in conflict)", who)}


def copy_edits(source: KeptOriginals, target: EditableStore, embedder: Embedder, doc_ids: Iterable[str]) -> list[str]:
    """The edits of `doc_ids` kept in `source` (another knowledge base's store: kb copy, reindex --from; a folder of
    kept originals: rebuild --from) copied to `target` and applied where the copy's chunks hold the same text.
    Returns the keys applied."""
    ids = set(doc_ids)
    their, mine = source.edits, target.edits
    if their is None or not ids:
        return []
    if their.path is not None and mine.path is not None and their.path.resolve() == mine.path.resolve():
        return []  # a rebuild in place: its own edits, applied already by the re-index
    mine.copy_from(their, ids)
    return reapply(target, embedder, ids)


__all__ = ["add_chunk", "chunk_of", "conflicts", "copy_edits", "drop", "edit_chunk", "embedded_text", "history",
           "keep", "reapply", "resume", "revert", "set_disabled"]
