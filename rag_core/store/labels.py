"""A knowledge base's document labels beside its index: each document's front-matter fields (written by ingest)
and the tags a user set (`python -m rag_core tag DOC key=value`, the Knowledge base page, the API).

One JSON file per knowledge base (`<data-dir>/originals/<collection>.labels.json`), replaced atomically (a
temporary file, fsync, rename), so a process killed while tagging leaves the old labels or the new ones. Searches
never read it to filter chunks: a scope is resolved to documents (rag_core.retrieval.scope) and Milvus filters
the chunks on the `doc_id` scalar field with an escaped literal (store.milvus.filters).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import StoreError
from ..files import read_json_object, write_atomic
from ..retrieval.scope import BUILT_IN_KEYS, KEY_PATTERN, MAX_VALUE_CHARS

TagValues = Mapping[str, Sequence[str]]


class DocumentLabels:
    """Front matter and tags per doc_id; in memory when `path` is None (stores that keep no files)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._memory: dict[str, dict[str, dict[str, list[str]]]] = {}

    # ---------------------------------------------------------------- reading
    def _read(self) -> dict[str, dict[str, dict[str, list[str]]]]:
        if self.path is None:
            return json.loads(json.dumps(self._memory))
        return read_json_object(self.path, "The document labels in {path} cannot be read ({exc}); restore or delete "
                                           "the file (front matter comes back with `reindex`, tags must be set again).")

    def all(self) -> dict[str, dict[str, tuple[str, ...]]]:
        """doc_id -> key -> values: front matter, then tags (a tag adds to a front-matter key's values)."""
        out: dict[str, dict[str, tuple[str, ...]]] = {}
        for doc_id, parts in self._read().items():
            merged: dict[str, list[str]] = {}
            for part in ("front_matter", "tags"):
                for key, values in (parts.get(part) or {}).items():
                    merged.setdefault(key, [])
                    merged[key] += [v for v in values if v not in merged[key]]
            out[doc_id] = {key: tuple(values) for key, values in merged.items() if values}
        return out

    def tags(self, doc_id: str) -> dict[str, list[str]]:
        return dict(self._read().get(doc_id, {}).get("tags") or {})

    # ---------------------------------------------------------------- writing
    def _write(self, change: Any) -> None:
        with self._lock:
            data = self._read()
            change(data)
            data = {doc_id: parts for doc_id, parts in data.items() if any(parts.values())}
            if self.path is None:
                self._memory = data
                return
            write_atomic(self.path, json.dumps(data, ensure_ascii=False, sort_keys=True))

    def set_front_matter(self, items: Iterable[tuple[str, TagValues]]) -> None:
        """Each (doc_id, fields) as ingest read them from its new version (replacing the old version's)."""
        pairs = [(doc_id, {k: list(v) for k, v in fields.items()}) for doc_id, fields in items]

        def change(data: dict[str, Any]) -> None:
            for doc_id, fields in pairs:
                data.setdefault(doc_id, {})["front_matter"] = fields
        self._write(change)

    def set_tags(self, doc_id: str, tags: TagValues, *, replace: bool = False) -> dict[str, list[str]]:
        """Add `tags` (key -> values; an empty list removes the key) to the document's, or `replace` them all.
        Returns its tags. Raises StoreError naming a bad key or value."""
        checked = check_tags(tags)
        result: dict[str, list[str]] = {}

        def change(data: dict[str, Any]) -> None:
            own = {} if replace else dict(data.get(doc_id, {}).get("tags") or {})
            for key, values in checked.items():
                if values:
                    own[key] = values
                else:
                    own.pop(key, None)
            data.setdefault(doc_id, {})["tags"] = own
            result.update(own)
        self._write(change)
        return result

    def copy_tags(self, source: DocumentLabels, doc_ids: Iterable[str]) -> None:
        """The tags of `doc_ids` in `source` (another knowledge base: kb copy, reindex --from) made these."""
        theirs = source._read()
        pairs = [(d, theirs[d]["tags"]) for d in doc_ids if (theirs.get(d) or {}).get("tags")]
        if pairs:
            def change(data: dict[str, Any]) -> None:
                for doc_id, tags in pairs:
                    data.setdefault(doc_id, {})["tags"] = tags
            self._write(change)

    def forget(self, doc_ids: Iterable[str]) -> None:
        ids = set(doc_ids)
        self._write(lambda data: [data.pop(d, None) for d in ids])

    def drop(self) -> None:
        with self._lock:
            self._memory = {}
            if self.path is not None:
                self.path.unlink(missing_ok=True)


def check_tags(tags: TagValues) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for key, values in tags.items():
        if not isinstance(key, str) or not KEY_PATTERN.fullmatch(key):
            raise StoreError(f"Tag key {key!r}: use letters, digits, _ . - (starting with a letter or _), at most 64.")
        if key in BUILT_IN_KEYS:
            raise StoreError(f"Tag key {key!r} is built in ({', '.join(BUILT_IN_KEYS)} come from the document).")
        values = [values] if isinstance(values, str) else list(values)
        if not all(isinstance(v, str) and v.strip() and len(v) <= MAX_VALUE_CHARS and "\x00" not in v
                   for v in values):
            raise StoreError(f"Tag {key}: values must be non-empty text of at most {MAX_VALUE_CHARS} characters.")
        out[key] = list(dict.fromkeys(v.strip() for v in values))
    return out


def parse_tags(items: Sequence[str]) -> dict[str, list[str]]:
    """`["team=sre", "team=dba", "owner="]` -> {"team": ["sre", "dba"], "owner": []} (empty value: remove)."""
    out: dict[str, list[str]] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise StoreError(f"Tag {item!r} is not key=value (e.g. team=sre; key= removes the key).")
        out.setdefault(key.strip(), [])
        if value.strip():
            out[key.strip()].append(value.strip())
    return out
