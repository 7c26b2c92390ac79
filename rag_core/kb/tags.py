"""Document metadata as people see and change it: every document's labels (retrieval.scope: folder, type, ingest
time, front matter, tags) and setting tags, the same for the CLI (`tag`, `docs --json`), the API and the pages."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..errors import InvalidTags, NotIndexed, RagError
from ..ports import LabelledStore
from ..retrieval.scope import Labels, document_labels, known_keys, labels_of
from ..store.labels import parse_tags, relabelled


def metadata(store: LabelledStore) -> dict[str, dict[str, list[str]]]:
    """doc_id -> key -> values of every indexed document."""
    labels = store.labels.all()
    return {d.doc_id: {k: list(v) for k, v in labels_of(d, labels.get(d.doc_id)).items()}
            for d in store.list_documents()}


def filter_keys(store: LabelledStore) -> tuple[str, ...]:
    """The keys a metadata filter may use on this knowledge base."""
    return known_keys(store.labels.all())


def tag(store: LabelledStore, doc_id: str, items: Sequence[str] | dict[str, list[str]], *, replace: bool = False,
        ) -> dict[str, list[str]]:
    """Set tags on an indexed document (`["team=sre", "owner="]`: `owner=` removes the key; `replace`: these are
    all its tags). Returns its tags. NotIndexed for an unknown document, InvalidTags for a bad tag."""
    doc = next((d for d in store.list_documents() if d.doc_id == doc_id), None)
    if doc is None:
        raise NotIndexed(f"No document {doc_id!r} in the knowledge base (`docs` lists them).")
    tags = parse_tags(items) if not isinstance(items, dict) else items
    if not tags and not replace:
        raise InvalidTags("Give at least one tag as key=value (key= removes the key).")

    def fits(labels: Labels) -> None:
        try:
            document_labels(doc.doc_id, doc.extension, doc.ingested_at, labels)
        except RagError as exc:
            raise InvalidTags(str(exc)) from None

    result: dict[str, list[str]] = {}

    def change(writer: Mapping[str, str]) -> list[str]:  # its chunk rows carry the new labels (store.labels)
        result.update(store.labels.set_tags(doc_id, tags, replace=replace, writer=writer, fits=fits))
        return [doc_id]

    relabelled(store, change)
    return result
