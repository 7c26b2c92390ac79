"""Chunk edits kept beside the index: which chunks a person disabled, edited or added, with each chunk's history
(who, when, what).

One JSON file per knowledge base (`<data-dir>/originals/<collection>.edits.json`), replaced atomically (a temporary
file, fsync, rename): a process killed during an edit leaves the old state or the new one, never neither. With
database.url set, the same document is a row of the shared database instead (store.kept). An edit
is recorded against the chunk's content (`chunkHash`, the sha256 of its text, as the chunk rows carry it) and the
document version it was made on, so it keeps applying when the document is re-indexed or re-uploaded unchanged and
stops applying (a conflict, listed by `conflicts`) when the chunk under that evidence key now holds other text. An
added chunk (`added`) has no base chunk: it conflicts when the document's own chunks now reach its evidence key.

A change that rewrites a chunk row is written in three steps, so the file and the row never disagree after a kill:
`begin` records it as `pending` (with the hash of the row's new content and its writer), the caller writes the row,
`finish` makes it the edit. `recover` (run when the store opens) settles the pending changes of writers that are
gone: finished when the row holds the new content, dropped when it still holds the old.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..files import FileLock
from ..identity import evidence_key
from ..ports import KeptChunkEdits
from ..records import StoredChunk
from .kept import FileDocument, KeptDocument, MemoryDocument

CONTENT = ("text", "keywords", "questions")  # what an edit changes in a chunk's row
ADDED = "added"


def content_hash(text: str) -> str:
    """The sha256 of a chunk's text, as the chunk rows' `chunkHash` and a pending change's `content`."""
    return hashlib.sha256(text.encode()).hexdigest()


def is_active(entry: Mapping[str, Any]) -> bool:
    """Whether an entry still changes its chunk (disabled, edited or added), not only keeps its history."""
    return bool(entry.get("disabled") or entry.get(ADDED) or any(entry.get(n) for n in CONTENT))


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


DAMAGED = "The chunk edits in {path} cannot be read ({exc}); restore or delete the file."


class ChunkEdits:
    """evidence key -> {"doc_id", "version", "hash", "disabled", "text", "keywords", "questions", "added",
    "history": [...], "pending": {...}}; in memory when `path` is None, in `document` when given (store.kept: the
    shared-state database). The KeptChunkEdits of rag_core.ports."""

    def __init__(self, path: Path | None = None, lock: FileLock | None = None, *,
                 document: KeptDocument | None = None) -> None:
        self.path = path if document is None else None
        self.lock = lock or FileLock(None if path is None else path.parent / f"{path.name}.lock")
        self.document = document or (MemoryDocument() if path is None else FileDocument(path, DAMAGED))

    def _read(self) -> dict[str, dict[str, Any]]:
        return self.document.read()

    def all(self) -> dict[str, dict[str, Any]]:
        return self._read()

    def disabled(self) -> dict[str, str]:
        """evidence key -> the content hash it was disabled on."""
        return {key: str(e.get("hash", "")) for key, e in self._read().items() if e.get("disabled")}

    def disabled_among(self, chunks: Iterable[StoredChunk]) -> set[str]:
        """The evidence keys of `chunks` disabled on the text each holds now (ChunkStore.disabled_keys)."""
        off = self.disabled()
        return {key for c in chunks
                if (key := evidence_key(c.doc_id, c.chunk_index, c.id, c.content)) in off
                and off[key] in ("", c.metadata.get("chunkHash"))}

    def history(self, key: str) -> list[dict[str, Any]]:
        return list(self._read().get(key, {}).get("history") or [])

    def set_disabled(self, key: str, *, doc_id: str, version: str, chunk_hash: str, disabled: bool, who: str,
                     what: str = "", rebase: bool = True) -> dict[str, Any]:
        """Disable (or enable) the chunk `key` holding the text of `chunk_hash`; recorded in its history (`what`, by
        default "disabled" or "enabled"). `rebase`: as for `begin`."""
        with self.lock():
            data = self._read()
            entry = data.setdefault(key, {"history": []})
            if rebase:
                _rebase(entry, chunk_hash, who)
            entry.update({"doc_id": doc_id, "version": version, "hash": chunk_hash, "disabled": disabled})
            entry["history"].append({"who": who or "local", "when": _now(),
                                     "what": what or ("disabled" if disabled else "enabled"), "version": version})
            self._write(data)
            return entry

    def content_change(self, key: str, *, text: str | None, keywords: list[str] | None,
                       questions: list[str] | None) -> tuple[dict[str, Any], str]:
        """The fields a content edit sets (None: keep what the chunk has) and what its history says."""
        changes: dict[str, Any] = {}
        what = []
        for name, value in (("text", text), ("keywords", keywords), ("questions", questions)):
            if value is not None:
                changes[name] = value
                what.append(f"{name} edited" if name == "text" else f"{name}: {', '.join(value) or 'none'}")
        return changes, "; ".join(what)

    def staged(self, key: str, changes: Mapping[str, Any], unset: Sequence[str] = (),
               chunk_hash: str | None = None) -> dict[str, Any]:
        """The entry `key` would be with `changes` made (and `unset` removed), on the chunk of `chunk_hash`: what
        the chunk row is rewritten from. Nothing is written."""
        entry = self._read().get(key, {"history": [], "disabled": False})
        if chunk_hash is not None:
            _rebase(entry, chunk_hash, "")
        for name in unset:
            entry.pop(name, None)
        return {**entry, **changes}

    def begin(self, key: str, *, doc_id: str, version: str, chunk_hash: str, changes: Mapping[str, Any],
              unset: Sequence[str] = (), what: str, who: str, content: str, writer: Mapping[str, str],
              replaces: str = "", rebase: bool = True) -> None:
        """Record a change whose chunk row is about to be written with `content` as pending (see the module
        docstring); `writer`: the fields naming this process (store.milvus.writers). `replaces`: an entry this one
        takes the place of once finished (an added chunk moved to another key). `rebase`: an earlier edit made on
        other text than `chunk_hash` is let go (False: the change carries it over, a conflict kept)."""
        with self.lock():
            data = self._read()
            entry = data.setdefault(key, {"history": [], "disabled": False})
            entry["pending"] = {"doc_id": doc_id, "version": version, "hash": chunk_hash, "set": dict(changes),
                                "unset": list(unset), "what": what, "who": who or "local", "when": _now(),
                                "content": content_hash(content), "replaces": replaces, "rebase": rebase,
                                "committed_ns": time.time_ns(), **writer}
            self._write(data)

    def finish(self, key: str) -> dict[str, Any]:
        """The pending change of `key` becomes its edit, recorded in its history. Returns the entry."""
        with self.lock():
            data = self._read()
            entry = data.get(key, {})
            pending = entry.pop("pending", None)
            if pending is None:
                return entry
            if pending.get("rebase", True):
                _rebase(entry, pending["hash"], pending["who"])
            for name in pending["unset"]:
                entry.pop(name, None)
            entry.update({"doc_id": pending["doc_id"], "version": pending["version"], "hash": pending["hash"],
                          **pending["set"]})
            entry.setdefault("disabled", False)
            if pending.get("replaces"):  # it moves here with its history
                entry["history"] = list(data.pop(pending["replaces"], {}).get("history") or []) + list(
                    entry.get("history") or [])
            entry.setdefault("history", []).append({"who": pending["who"], "when": pending["when"],
                                                    "what": pending["what"], "version": pending["version"]})
            self._write(data)
            return entry

    def abort(self, key: str) -> None:
        """Forget the pending change of `key` (its row was not written): the entry is as it was."""
        with self.lock():
            data = self._read()
            entry = data.get(key)
            if entry is None or entry.pop("pending", None) is None:
                return
            if not entry.get("history"):  # made by the aborted change alone (an added chunk)
                data.pop(key)
            self._write(data)

    def pending(self) -> dict[str, dict[str, Any]]:
        """evidence key -> its pending change (a row being written, or left by a killed writer)."""
        return {key: e["pending"] for key, e in self._read().items() if e.get("pending")}

    def recover(self, row_content: Callable[[str, str], str | None], abandoned: Callable[[Mapping[str, Any]], bool],
                ) -> list[str]:
        """Settle the pending changes whose writer is gone (`abandoned`): finished when the chunk row under the key
        now holds their content (`row_content(doc_id, key)`: its text, None when there is no such row), else
        dropped. Returns the keys finished."""
        finished: list[str] = []
        with self.lock(wait=False) as free:
            if not free:  # a writer holds the lock right now: its changes are its own, others are settled later
                return finished
            for key, pending in self.pending().items():
                if not abandoned(pending):
                    continue
                now = row_content(pending["doc_id"], key)
                if now is not None and content_hash(now) == pending["content"]:
                    self.finish(key)
                    finished.append(key)
                else:
                    self.abort(key)
        return finished

    def let_go(self, key: str, what: str, who: str) -> dict[str, Any]:
        """A conflict dropped, without writing a row: the edit is discarded (disabled, text, keywords, questions,
        added), the history stays and says `what`."""
        with self.lock():
            data = self._read()
            entry = data.setdefault(key, {"history": []})
            for name in (*CONTENT, ADDED):
                entry.pop(name, None)
            entry["disabled"] = False
            entry.setdefault("history", []).append({"who": who or "local", "when": _now(), "what": what})
            self._write(data)
            return entry

    def _write(self, data: Mapping[str, Any]) -> None:
        self.document.write(dict(data))

    def conflicts(self, current: Mapping[str, str], doc_id: str | None = None) -> list[str]:
        """The edits that no longer apply (`current`: evidence key -> content hash of a document's own chunks, as
        just re-indexed; added chunks are not among them): a disabled or edited chunk whose key now holds other
        text, and with `doc_id` one whose key the document no longer has; an added chunk whose key the document's
        own chunks now take."""
        found = []
        for key, e in self._read().items():
            if not is_active(e) or (key not in current if doc_id is None else e.get("doc_id") != doc_id):
                continue
            if (key in current) if e.get(ADDED) else (current.get(key) != e.get("hash") and e.get("hash") != ""):
                found.append(key)
        return sorted(found)

    def mark_unapplied(self, doc_ids: Iterable[str], unapplied: bool) -> bool:
        """Mark (or unmark) the content edits and added chunks of `doc_ids` as not yet written onto their documents'
        new versions: set before a re-index commits, cleared once they are re-applied, so a process killed in between
        leaves the mark and the next open re-applies them (kb.chunk_edits.resume). Returns whether there were any."""
        ids = set(doc_ids)
        with self.lock():
            data = self._read()
            touched = [e for e in data.values()
                       if e.get("doc_id") in ids and (e.get(ADDED) or any(e.get(n) for n in CONTENT))]
            for e in touched:
                if unapplied:
                    e["unapplied"] = True
                else:
                    e.pop("unapplied", None)
            if touched:
                self._write(data)
            return bool(touched)

    def unapplied(self) -> set[str]:
        """The documents with edits marked by `mark_unapplied`."""
        return {str(e["doc_id"]) for e in self._read().values() if e.get("unapplied")}

    def copy_from(self, source: KeptChunkEdits, doc_ids: Iterable[str]) -> None:
        """The edits of `doc_ids` in `source` (another knowledge base: kb copy, reindex --from) made these. They
        apply where the copy's chunks hold the same text (another chunking makes other chunks)."""
        ids = set(doc_ids)
        theirs = {k: v for k, v in source.all().items() if v.get("doc_id") in ids}
        if theirs:
            with self.lock():
                self._write({**self._read(), **theirs})

    def forget(self, doc_ids: Iterable[str]) -> None:
        ids = set(doc_ids)
        with self.lock():
            data = self._read()
            self._write({k: v for k, v in data.items() if v.get("doc_id") not in ids})

    def drop(self) -> None:
        with self.lock():
            self.document.remove()


def _rebase(entry: dict[str, Any], chunk_hash: str, who: str) -> None:
    """A change made on other text than the entry's edit was (a conflict after a re-upload, acted on as the chunk now
    is): the old edit stops, so it is not applied to the new chunk with the change."""
    if entry.get("hash") in (None, "", chunk_hash) or not is_active(entry):
        return
    for name in (*CONTENT, ADDED):
        entry.pop(name, None)
    entry["disabled"] = False
    entry.setdefault("history", []).append({"who": who or "local", "when": _now(),
                                            "what": "the earlier edit (made on other text) was let go"})
