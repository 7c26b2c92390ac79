"""Document metadata as people see and change it: every document's labels (retrieval.scope: folder, type, ingest
time, front matter, tags) and setting tags, the same for the CLI (`tag`, `docs --json`), the API and the pages."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import NotIndexed, StoreError
from ..retrieval.scope import known_keys, labels_of
from ..store.labels import parse_tags


def metadata(store: Any) -> dict[str, dict[str, list[str]]]:
    """doc_id -> key -> values of every indexed document."""
    labels = store.labels.all()
    return {d.doc_id: {k: list(v) for k, v in labels_of(d, labels.get(d.doc_id)).items()}
            for d in store.list_documents()}


def filter_keys(store: Any) -> tuple[str, ...]:
    """The keys a metadata filter may use on this knowledge base."""
    return known_keys(store.labels.all())


def tag(store: Any, doc_id: str, items: Sequence[str] | dict[str, list[str]], *, replace: bool = False,
        ) -> dict[str, list[str]]:
    """Set tags on an indexed document (`["team=sre", "owner="]`: `owner=` removes the key; `replace`: these are
    all its tags). Returns its tags. NotIndexed for an unknown document, StoreError for a bad tag."""
    if not any(d.doc_id == doc_id for d in store.list_documents()):
        raise NotIndexed(f"No document {doc_id!r} in the knowledge base (`docs` lists them).")
    tags = parse_tags(items) if not isinstance(items, dict) else items
    if not tags and not replace:
        raise StoreError("Give at least one tag as key=value (key= removes the key).")
    return store.labels.set_tags(doc_id, tags, replace=replace)
