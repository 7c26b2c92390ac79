"""A knowledge base's document labels beside its index: each document's front-matter fields (written by ingest)
and the tags a user set (`python -m rag_core tag DOC key=value`, the Knowledge base page, the API).

One JSON file per knowledge base (`<data-dir>/originals/<collection>.labels.json`), replaced atomically (a
temporary file, fsync, rename), so a process killed while tagging leaves the old labels or the new ones (with
database.url set, a row of the shared database instead: store.kept). It is the
source of truth; every chunk row carries a copy (its `labels` field, scope.document_labels) that Milvus
filters on directly (store.milvus.filters), so searches never read this file to filter chunks.

A change the rows must follow is written as chunk edits are (store.edits): the file changes with a `pending` mark
naming its writer (store.milvus.writers) in one atomic write, the caller rewrites the document's rows (`relabel`
on the store), `finish` clears the mark. `recover` (run when the store opens) re-derives from the file the rows of
the marks whose writer is gone. Ingest's mark also holds the new version's front matter, applied on recovery when
the document's active version is the one it was read from (same content hash): a kill after the commit loses none.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import InvalidTags
from ..files import FileLock
from ..ports import KeptLabels, LabelledStore
from ..scope import BUILT_IN_KEYS, KEY_PATTERN, MAX_VALUE_CHARS
from .kept import FileDocument, KeptDocument, MemoryDocument

TagValues = Mapping[str, Sequence[str]]
PENDING, RELABEL = "pending", "relabel"  # the marks of ingest (with the new front matter) and of a tag change


DAMAGED = ("The document labels in {path} cannot be read ({exc}); restore or delete the file (front matter comes back "
           "with `reindex`, tags must be set again).")


class DocumentLabels:
    """Front matter and tags per doc_id; in memory when `path` is None (stores that keep no files), in `document` when
    given (store.kept: the shared-state database). The KeptLabels of rag_core.ports."""

    def __init__(self, path: Path | None = None, lock: FileLock | None = None, *,
                 document: KeptDocument | None = None) -> None:
        self.path = path if document is None else None
        self.lock = lock or FileLock(None if path is None else path.parent / f"{path.name}.lock")
        self.document = document or (MemoryDocument() if path is None else FileDocument(path, DAMAGED))

    # ---------------------------------------------------------------- reading
    def _read(self) -> dict[str, dict[str, dict[str, list[str]]]]:
        return self.document.read()

    def all(self) -> dict[str, dict[str, tuple[str, ...]]]:
        """doc_id -> key -> values: front matter, then tags (a tag adds to a front-matter key's values)."""
        return {doc_id: merged for doc_id, parts in self._read().items() if (merged := _merged(parts))}

    def of(self, front_matter: Mapping[str, TagValues | None]) -> dict[str, dict[str, tuple[str, ...]]]:
        """doc_id -> its labels as `all` gives them, for the documents of `front_matter` (doc_id -> the front matter
        that replaces the document's, what a new version's rows are written with; None: its own), in one read."""
        data = self._read()
        out: dict[str, dict[str, tuple[str, ...]]] = {}
        for doc_id, fields in front_matter.items():
            parts = dict(data.get(doc_id) or {})
            if fields is not None:
                parts["front_matter"] = {k: list(v) for k, v in fields.items()}
            out[doc_id] = _merged(parts)
        return out

    def tags(self, doc_id: str) -> dict[str, list[str]]:
        return dict(self._read().get(doc_id, {}).get("tags") or {})

    def tags_by_document(self) -> dict[str, dict[str, list[str]]]:
        """doc_id -> its tags (not its front matter), in one read."""
        return {doc_id: dict(tags) for doc_id, parts in self._read().items() if (tags := parts.get("tags"))}

    # ---------------------------------------------------------------- writing
    def _write(self, change: Any) -> None:
        with self.lock():
            data = self._read()
            change(data)
            self.document.write({doc_id: parts for doc_id, parts in data.items() if any(parts.values())})

    def set_tags(self, doc_id: str, tags: TagValues, *, replace: bool = False, writer: Mapping[str, str] | None = None,
                 fits: Callable[[dict[str, tuple[str, ...]]], None] | None = None) -> dict[str, list[str]]:
        """Add `tags` (key -> values; an empty list removes the key) to the document's, or `replace` them all.
        Returns its tags. Raises InvalidTags naming a bad key or value. `writer`: mark the document pending (see the
        module docstring) in the same write; `fits(labels)`: raises when the document's labels would not fit its
        rows (nothing is written then)."""
        checked = check_tags(tags)
        result: dict[str, list[str]] = {}

        def change(data: dict[str, Any]) -> None:
            own = {} if replace else dict(data.get(doc_id, {}).get("tags") or {})
            for key, values in checked.items():
                if values:
                    own[key] = values
                else:
                    own.pop(key, None)
            entry = data.setdefault(doc_id, {})
            entry["tags"] = own
            if fits is not None:
                fits(_merged(entry))
            if writer is not None:
                entry[RELABEL] = _pending(writer)
            result.update(own)
        self._write(change)
        return result

    # ---------------------------------------------------------------- rows following the file
    def begin(self, front_matter: Mapping[str, tuple[Mapping[str, Sequence[str]], str]],
              writer: Mapping[str, str]) -> None:
        """Before new versions are written: doc_id -> (its new front matter, the content hash it was read from),
        marked pending (see the module docstring) until `finish` makes it the document's."""
        def change(data: dict[str, Any]) -> None:
            for doc_id, (fields, content) in front_matter.items():
                data.setdefault(doc_id, {})[PENDING] = {
                    **_pending(writer), "front_matter": {k: list(v) for k, v in fields.items()}, "content": content}
        self._write(change)

    def finish(self, doc_ids: Iterable[str], *, kind: str = PENDING, apply: bool = True) -> None:
        """The documents' rows follow the file now: their marks of `kind` cleared (PENDING: ingest's, RELABEL: a
        tag change's), a mark's front matter made theirs first (`apply`; False: dropped)."""
        ids = set(doc_ids)

        def change(data: dict[str, Any]) -> None:
            for doc_id in ids & data.keys():
                mark = data[doc_id].pop(kind, None) or {}
                if apply and "front_matter" in mark:
                    data[doc_id]["front_matter"] = mark["front_matter"]
        if ids:
            self._write(change)

    def pending(self) -> dict[str, list[dict[str, Any]]]:
        """doc_id -> its marks: rows being rewritten, or left by a killed writer."""
        return {doc_id: [parts[k] for k in (PENDING, RELABEL) if parts.get(k)] for doc_id, parts in self._read().items()
                if parts.get(PENDING) or parts.get(RELABEL)}

    def recover(self, relabel: Callable[[list[str]], Any], abandoned: Callable[[Mapping[str, Any]], bool],
                content_hashes: Callable[[], Mapping[str, str]]) -> list[str]:
        """Settle the marks whose writer is gone (`abandoned`): a mark's front matter becomes the document's when its
        active version holds the content it was read from (`content_hashes()`: doc_id -> content hash), then the
        rows are re-derived from the file (`relabel(doc_ids)`) and the marks cleared. Returns the documents."""
        with self.lock(wait=False) as free:  # a writer holding it: settled at a later open
            return self._recover(relabel, abandoned, content_hashes) if free else []

    def _recover(self, relabel: Callable[[list[str]], Any], abandoned: Callable[[Mapping[str, Any]], bool],
                 content_hashes: Callable[[], Mapping[str, str]]) -> list[str]:
        gone = {doc_id: [kind for kind in (PENDING, RELABEL) if parts.get(kind) and abandoned(parts[kind])]
                for doc_id, parts in self._read().items()}
        gone = {doc_id: kinds for doc_id, kinds in gone.items() if kinds}
        if not gone:
            return []
        hashes = content_hashes()

        def settle(data: dict[str, Any]) -> None:  # the marks stay (without front matter) until the rows follow
            for doc_id, kinds in gone.items():
                mark = (data[doc_id].get(PENDING) if PENDING in kinds else None) or {}
                fields = mark.pop("front_matter", None)
                if fields is not None and hashes.get(doc_id) == mark.get("content"):
                    data[doc_id]["front_matter"] = fields
        self._write(settle)
        relabel(sorted(gone))
        for kind in (PENDING, RELABEL):
            self.finish([doc_id for doc_id, kinds in gone.items() if kind in kinds], kind=kind, apply=False)
        return sorted(gone)

    def copy_tags(self, source: KeptLabels, doc_ids: Iterable[str], writer: Mapping[str, str] | None = None,
                  ) -> list[str]:
        """The tags of `doc_ids` in `source` (another knowledge base: kb copy, reindex --from) made these (`writer`:
        marked as `set_tags` marks them). Returns the documents that got tags."""
        theirs = source.tags_by_document()
        pairs = [(d, theirs[d]) for d in doc_ids if theirs.get(d)]
        if pairs:
            def change(data: dict[str, Any]) -> None:
                for doc_id, tags in pairs:
                    data.setdefault(doc_id, {})["tags"] = tags
                    if writer is not None:
                        data[doc_id][RELABEL] = _pending(writer)
            self._write(change)
        return [d for d, _ in pairs]

    def forget(self, doc_ids: Iterable[str]) -> None:
        ids = set(doc_ids)
        self._write(lambda data: [data.pop(d, None) for d in ids])

    def drop(self) -> None:
        with self.lock():
            self.document.remove()


def relabelled(store: LabelledStore, change: Callable[[Mapping[str, str]], list[str]]) -> list[str]:
    """A change of `store`'s labels file that its rows follow: `change(writer)` writes it with a RELABEL mark naming
    `writer` and returns the documents it changed; their rows are then rewritten and the marks cleared (a kill in
    between: the store's `recover` finishes it)."""
    with store.labels.lock(), store.editing() as writer:
        doc_ids = change(writer)
        store.relabel(doc_ids)
        store.labels.finish(doc_ids, kind=RELABEL, apply=False)
    return doc_ids


def _merged(parts: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    merged: dict[str, list[str]] = {}
    for part in ("front_matter", "tags"):
        for key, values in (parts.get(part) or {}).items():
            merged.setdefault(key, [])
            merged[key] += [v for v in values if v not in merged[key]]
    return {key: tuple(values) for key, values in merged.items() if values}


def _pending(writer: Mapping[str, str]) -> dict[str, Any]:
    return {**writer, "committed_ns": time.time_ns()}


def check_tags(tags: TagValues) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for key, values in tags.items():
        if not isinstance(key, str) or not KEY_PATTERN.fullmatch(key):
            raise InvalidTags(f"Tag key {key!r}: use letters, digits, _ . - (starting with a letter or _), at most 64.")
        if key in BUILT_IN_KEYS:
            raise InvalidTags(f"Tag key {key!r} is built in ({', '.join(BUILT_IN_KEYS)} come from the document).")
        values = [values] if isinstance(values, str) else list(values)
        if not all(isinstance(v, str) and v.strip() and len(v) <= MAX_VALUE_CHARS and "\x00" not in v
                   for v in values):
            raise InvalidTags(f"Tag {key}: values must be non-empty text of at most {MAX_VALUE_CHARS} characters.")
        out[key] = list(dict.fromkeys(v.strip() for v in values))
    return out


def parse_tags(items: Sequence[str]) -> dict[str, list[str]]:
    """`["team=sre", "team=dba", "owner="]` -> {"team": ["sre", "dba"], "owner": []} (empty value: remove)."""
    out: dict[str, list[str]] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise InvalidTags(f"Tag {item!r} is not key=value (e.g. team=sre; key= removes the key).")
        out.setdefault(key.strip(), [])
        if value.strip():
            out[key.strip()].append(value.strip())
    return out
