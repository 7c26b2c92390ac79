"""Scoped search: `--filter key=value` (and `?filter=`, the debugger's chips, the agent's tool) as the labels the store
filters chunk rows on, and the documents it selects (counted for the debugger).

Every document has labels: `folder` (its doc_id's folder; `folder=runbooks/` matches that folder and every folder
below it), `type` (its file extension), `ingested` (its ingest time, ISO-8601 UTC, matched by its year, month, day,
hour, minute or second: `ingested=2026-12`, `ingested=2026-12-01T10`), the scalar fields of its Markdown/YAML front
matter, and the tags a user set (rag_core.store.labels). Several values of one key are OR, different keys AND.

Every chunk row carries its document's labels as `key=value` strings (`document_labels`) in a field Milvus filters
on directly (an ARRAY of VARCHAR; store.milvus.filters makes the escaped `array_contains_any` expression), so a
scope is matched by exact strings: a folder row holds its folder and every parent folder, an ingest time its year,
month, day, hour, minute and second. (Every character prefix of the time would be 26 labels a row: Milvus Lite 2.5.1
scans the array of every row, so a filter's cost grows with the labels a row carries.) `Scope.labels` gives the
strings a filter asks for, and `resolve` counts documents by the same strings, so what the debugger counts is what
the store searched.

Pure functions: a Scope is parsed once, the same way for every entry point, and resolved against the listed
documents; what it removed is counted so the debugger can say so, and a scope that matches no document is a warning,
never a silent empty result or a silent fallback to everything.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import RetrievalError
from .phrases import Phrase, english
from .records import StoredDocument

BUILT_IN_KEYS = ("folder", "type", "ingested")
KEY_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$")
MAX_VALUE_CHARS = 1024
# what `ingested=` takes: a year, month, day, hour, minute, second or the whole time (INGESTED_CUTS of it)
INGESTED_VALUE = re.compile(r"^\d{4}(-\d{2}(-\d{2}(T\d{2}(:\d{2}(:\d{2}([+-]\d{2}:\d{2})?)?)?)?)?)?$")
INGESTED_CUTS = (4, 7, 10, 13, 16, 19)

Labels = Mapping[str, Sequence[str]]  # key -> values of one document (front matter and tags)


@dataclass(frozen=True)
class Scope:
    """`terms`: (key, values) sorted by key; values of one key are OR, keys AND. Empty: everything."""

    terms: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.terms)

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(key for key, _ in self.terms)

    def to_dict(self) -> dict[str, list[str]]:
        return {key: list(values) for key, values in self.terms}

    @property
    def text(self) -> str:
        return " ".join(f"{key}={value}" for key, values in self.terms for value in values)

    def items(self) -> list[str]:
        """As `key=value` strings, the form every entry point takes."""
        return [f"{key}={value}" for key, values in self.terms for value in values]

    def labels(self) -> list[str]:
        """The row labels it asks for (values normalised as `document_labels` writes them): a row matches when, for
        every key, it carries one of that key's labels."""
        return [label(key, value) for key, values in self.terms for value in values]


def split_terms(text: str) -> list[str]:
    """`'folder=runbooks/ team="site reliability"'` -> `["folder=runbooks/", "team=site reliability"]`: key=value
    terms separated by spaces, a value holding spaces in quotes (shell rules), as the debugger's filter box, the
    Knowledge base page's tags box and `rag.default-filter` take them."""
    try:
        return shlex.split(text)
    except ValueError as exc:
        raise RetrievalError(f"Filter {text!r}: {exc}; quote a value holding spaces, e.g. team=\"site reliability\"."
                             ) from None


def parse_scope(items: Iterable[str] | str | None, known: Sequence[str] | None = None) -> Scope:
    """`["folder=runbooks/", "type=md", "type=txt"]` -> a Scope; `type=md,html` is `type=md type=html` (one key's
    values OR). `known`: the keys there are (None: any well-formed key, checked later by `resolve`). Raises
    RetrievalError in one line listing the known keys."""
    if items is None:
        return Scope()
    if isinstance(items, str):
        items = [items]
    terms: dict[str, list[str]] = {}
    for item in items:
        if not isinstance(item, str):
            raise RetrievalError(f"A filter is key=value text, got {item!r}.{_known(known)}")
        key, sep, values = item.partition("=")
        key = key.strip()
        if not sep or not KEY_PATTERN.fullmatch(key):
            raise RetrievalError(f"Filter {item!r} is not key=value (e.g. folder=runbooks/ or type=md).{_known(known)}")
        for value in [v.strip() for v in values.split(",")] if "," in values else [values.strip()]:
            _add_term(terms, key, value, known)
    return Scope(tuple((key, tuple(values)) for key, values in sorted(terms.items())))


def _add_term(terms: dict[str, list[str]], key: str, value: str, known: Sequence[str] | None) -> None:
    if len(value) > MAX_VALUE_CHARS or "\x00" in value:
        raise RetrievalError(f"Filter {key}: the value must be at most {MAX_VALUE_CHARS} characters, without NUL.")
    if known is not None and key not in known:
        raise RetrievalError(f"Unknown filter key {key!r}.{_known(known)}")
    if key == "ingested" and not INGESTED_VALUE.fullmatch(value):
        raise RetrievalError(f"Filter ingested={value}: give a year, month, day, hour or minute of the ingest time "
                             "(UTC), e.g. ingested=2026, ingested=2026-12-01 or ingested=2026-12-01T10.")
    if value not in terms.setdefault(key, []):
        terms[key].append(value)


def _known(known: Sequence[str] | None) -> str:
    return f" Known keys: {', '.join(known)}." if known else ""


def folder_of(doc_id: str) -> str:
    return doc_id.rpartition("/")[0]


def labels_of(doc: StoredDocument, extra: Labels | None = None) -> dict[str, tuple[str, ...]]:
    """A document's labels: the built-in ones, then its front matter and tags (`extra`)."""
    labels: dict[str, tuple[str, ...]] = {key: tuple(values) for key, values in (extra or {}).items()}
    labels.update({"folder": (folder_of(doc.doc_id),), "type": (doc.extension.lower(),),
                   "ingested": (doc.ingested_at,)})
    return labels


MAX_LABELS = 4096  # per document: Milvus's largest ARRAY capacity (store.milvus.schema)
# The tag a source's sync gives each document it indexed: where a person opens it (rag_core.sources.sync). Its rows
# carry it in their metadata too (`sourceUrl`, store.milvus.rows), so hits link to it without reading the labels.
PROVENANCE_KEY = "source_url"


def label(key: str, value: str) -> str:
    """One `key=value` label, the value normalised as filters compare it (a folder without its slashes, a type
    lower-case without its dot). Keys hold no `=`, so the first one splits it back."""
    if key == "folder":
        value = value.strip("/")  # "" = the top folder only
    elif key == "type":
        value = value.lower().lstrip(".")
    return f"{key}={value}"


def document_labels(doc_id: str, extension: str, ingested_at: str, extra: Labels | None = None) -> tuple[str, ...]:
    """The labels every chunk row of a document carries: its folder and each folder above it (`folder=runbooks/`
    is a prefix), its type, its ingest time cut at its year, month, day, hour, minute and second
    (`ingested=2026-12`) and whole, its front matter and tags (`extra`). Raises RetrievalError when they would not
    fit a row (MAX_LABELS)."""
    folder = folder_of(doc_id)
    parts = folder.split("/") if folder else []
    out = [label("folder", "/".join(parts[:n])) for n in range(1, len(parts) + 1)] or [label("folder", "")]
    out.append(label("type", extension))
    out += [label("ingested", ingested_at[:n]) for n in (*INGESTED_CUTS, len(ingested_at)) if n <= len(ingested_at)]
    out += [label(key, value) for key, values in sorted((extra or {}).items()) if key not in BUILT_IN_KEYS
            for value in values]
    found = tuple(dict.fromkeys(out))
    if len(found) > MAX_LABELS:
        raise RetrievalError(f"{doc_id}: {len(found)} metadata labels, more than the {MAX_LABELS} a chunk row "
                             "holds; give it fewer front-matter values or tags.")
    return found


def label_value(labels: Iterable[str], key: str) -> str:
    """The first value of `key` among `key=value` labels ("" when there is none)."""
    prefix = f"{key}="
    return next((item[len(prefix):] for item in labels if item.startswith(prefix)), "")


def matches(scope: Scope, labels: Iterable[str]) -> bool:
    """Whether a row (or document) carrying `labels` is in `scope`: for every key, one of its labels."""
    own = set(labels)
    return all(any(label(key, v) in own for v in values) for key, values in scope.terms)


@dataclass(frozen=True)
class ScopeResolution:
    """What a Scope selected: the matching documents, and what it removed (for the debugger's count)."""

    scope: Scope
    doc_ids: tuple[str, ...]
    documents: int  # documents in the knowledge base
    chunks_removed: int  # chunks of the documents it left out

    @property
    def removed(self) -> int:
        return self.documents - len(self.doc_ids)

    @property
    def warning_phrase(self) -> Phrase | None:
        if self.doc_ids:
            return None
        return Phrase("warning.no_document_matches", {"filter": self.scope.text, "documents": self.documents})

    @property
    def warning(self) -> str | None:
        return english(self.warning_phrase) if self.warning_phrase else None

    def to_dict(self) -> dict[str, Any]:
        return {"filter": self.scope.to_dict(), "documents": self.documents, "matched": len(self.doc_ids),
                "removed": self.removed, "chunks_removed": self.chunks_removed}


def known_keys(labels: Mapping[str, Labels]) -> tuple[str, ...]:
    """The built-in keys, then every front-matter and tag key some document has, sorted."""
    extra = sorted({key for doc in labels.values() for key in doc} - set(BUILT_IN_KEYS))
    return (*BUILT_IN_KEYS, *extra)


def resolve(scope: Scope, documents: Sequence[StoredDocument], labels: Mapping[str, Labels]) -> ScopeResolution:
    """The documents `scope` selects. Raises RetrievalError for a key no document has (listing the known ones)."""
    known = known_keys(labels)
    unknown = [key for key in scope.keys if key not in known]
    if unknown:
        raise RetrievalError(f"Unknown filter key {unknown[0]!r}.{_known(known)}")
    chosen, removed = [], 0
    for doc in documents:
        if matches(scope, document_labels(doc.doc_id, doc.extension, doc.ingested_at, labels.get(doc.doc_id))):
            chosen.append(doc.doc_id)
        else:
            removed += doc.chunks
    return ScopeResolution(scope, tuple(sorted(chosen)), len(documents), removed)


# ---------------------------------------------------------------------------------------- front matter
_FRONT = re.compile(r"\A---[ \t]*\n(.*?\n)---[ \t]*(?:\n|\Z)", re.DOTALL)


def front_matter(text: str) -> dict[str, tuple[str, ...]]:
    """The scalar (and list-of-scalar) fields of a document's leading YAML front matter, as text: `key: value`,
    `key: [a, b]` and `key:` followed by `- item` lines; {} when it has none. Nested mappings are left out:
    filters compare text. (A small reader of the common subset, so no YAML library is needed.)"""
    match = _FRONT.match(text or "")
    if not match:
        return {}
    out: dict[str, list[str]] = {}
    current: str | None = None
    for line in match.group(1).splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        item = re.match(r"^\s+-\s+(.*)$", line)
        if item and current is not None:
            out.setdefault(current, []).append(_scalar(item.group(1)))
            continue
        field = re.match(r"^([A-Za-z_][A-Za-z0-9_.-]{0,63})\s*:\s*(.*)$", line)
        if not field:
            current = None
            continue
        key, value = field.group(1), field.group(2).strip()
        current = key if not value and key not in BUILT_IN_KEYS else None
        if not value or key in BUILT_IN_KEYS:
            continue
        if value.startswith("[") and value.endswith("]"):
            out[key] = [_scalar(v) for v in value[1:-1].split(",")]
        elif not value.startswith(("{", "|", ">")):
            out[key] = [_scalar(value)]
    return {key: tuple(v for v in values if v) for key, values in out.items() if any(values)}


def _scalar(value: str) -> str:
    value = value.split(" #")[0].strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        value = value[1:-1]
    return value.strip()[:MAX_VALUE_CHARS]
