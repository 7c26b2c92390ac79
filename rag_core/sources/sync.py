"""A source's sync: what is at the source now (its reader's items) against what the source indexed, in one pass.

An item whose version matches the last sync's, or whose content hash does once read, is unchanged and not embedded;
a changed one is replaced through ingest's versioned swap (its chunk edits and tags follow the re-upload rules); a
new one is added; a document under the source's folder whose item is gone is deleted, only when the listing
finished and the deletions stay within `sources.max-delete-share` of the source's documents (else the sync stops
before changing anything and says how to go on). One item failing is counted with its reason; the others go on.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ..access.records import ACCESS_KEY
from ..doc_ids import join_doc_id
from ..errors import RagError, SourceError
from ..ingest import Ingestor, IngestProgress
from ..ports import SourceReader
from ..scope import MAX_VALUE_CHARS, PROVENANCE_KEY
from ..store.labels import relabelled
from .book import Source, SourceBook
from .records import SourceItem

BATCH = 32  # items read and ingested at once: their bytes are held until ingested


@dataclass
class SyncResult:
    """What a sync did (or, dry, would do): the counts, each failure with its reason, and per action the paths."""

    source: str
    kb: str
    dry_run: bool = False
    added: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    failures: dict[str, str] = field(default_factory=dict)
    error: str = ""
    started_at: str = ""
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """As `sources sync --json` prints it and a source's status keeps it."""
        return {"source": self.source, "kb": self.kb, "dry_run": self.dry_run, "ok": not self.error,
                "error": self.error, "started_at": self.started_at, "seconds": round(self.seconds, 3),
                "added": len(self.added), "replaced": len(self.replaced), "unchanged": len(self.unchanged),
                "deleted": len(self.deleted), "failed": len(self.failures), "failures": dict(self.failures),
                "changes": {"added": self.added, "replaced": self.replaced, "deleted": self.deleted}}


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sync(source: Source, reader: SourceReader, ingestor: Ingestor, book: SourceBook, *, max_delete_share: float,
         allow_deletes: bool = False, dry_run: bool = False,
         progress: Callable[[IngestProgress], None] = lambda _: None) -> SyncResult:
    """Sync `source` (its reader `reader`) into the knowledge base `ingestor` writes, holding the source's sync lock
    (SourceError when another sync of it runs). The result is recorded as the source's status unless `dry_run`;
    a sync that cannot go on (the source unreadable, too many deletions) raises SourceError after recording it."""
    with book.sync_lock(source)(wait=False) as held:
        if not held:
            raise SourceError(f"source {source.key}: a sync of it is running already; try again when it ends")
        result = SyncResult(source.name, source.kb, dry_run, started_at=datetime.now(UTC).isoformat(timespec="seconds"))
        if not dry_run:
            book.started(source, result.started_at)
        started = time.perf_counter()
        indexed: dict[str, dict[str, Any]] = {}
        try:
            indexed = _run(source, reader, ingestor, result, max_delete_share, allow_deletes, progress)
        except SourceError as exc:
            result.error = str(exc)
        result.seconds = time.perf_counter() - started
        if not dry_run:
            book.save(source, result.to_dict(), source.indexed if result.error else indexed)
        if result.error:
            raise SourceError(result.error)
        return result


def _run(source: Source, reader: SourceReader, ingestor: Ingestor, result: SyncResult, max_delete_share: float,
         allow_deletes: bool, progress: Callable[[IngestProgress], None]) -> dict[str, dict[str, Any]]:
    dry = result.dry_run
    items: dict[str, SourceItem] = {}
    for item in reader.items():  # a SourceError here: nothing is changed
        doc_id = join_doc_id(source.folder, item.path)
        items.setdefault(doc_id, item)
    prefix = source.folder.strip("/") + "/"
    previous = {join_doc_id(source.folder, path): (path, seen) for path, seen in source.indexed.items()}
    present = {d.doc_id for d in ingestor.store.list_documents() if d.doc_id.startswith(prefix)}
    gone = sorted(present - set(items))
    if gone and not (allow_deletes or dry) and len(gone) > max_delete_share * len(present):
        raise SourceError(
            f"source {source.key}: the sync would delete {len(gone)} of its {len(present)} documents, more than "
            f"sources.max-delete-share ({max_delete_share:.0%}); check {reader.describe()}, then run "
            f"`sources sync {source.key} --dry-run` to see them and `--allow-deletes` to delete them")
    indexed: dict[str, dict[str, Any]] = {}
    todo: list[tuple[str, SourceItem, bytes, str]] = []
    for doc_id, item in items.items():
        path, seen = previous.get(doc_id, ("", {}))
        record = _record(item)
        if doc_id in present and item.version and seen.get("version") == item.version:
            result.unchanged.append(doc_id)
            indexed[item.path] = {**record, "hash": seen.get("hash", "")}
            continue
        try:
            data = item.read()
        except Exception as exc:  # noqa: BLE001 - one item's failure must not stop the others
            result.failures[doc_id] = str(exc) if isinstance(exc, RagError) else f"{item.path}: {exc}"
            if seen:
                indexed[item.path] = dict(seen)  # still indexed as it was
            continue
        digest = content_hash(data)
        if doc_id in present and seen.get("hash") == digest:
            result.unchanged.append(doc_id)
            indexed[item.path] = {**record, "hash": digest}
            continue
        if dry:
            (result.replaced if doc_id in present else result.added).append(doc_id)
            continue
        todo.append((doc_id, item, data, digest))
        if len(todo) >= BATCH:
            _ingest(source, ingestor, todo, result, indexed, progress)
    if not dry:
        _ingest(source, ingestor, todo, result, indexed, progress)
        _tag_provenance(source, ingestor, items, previous, [*result.added, *result.replaced, *result.unchanged])
    for doc_id in gone:
        if not dry:
            try:
                ingestor.delete(doc_id)
            except RagError as exc:
                result.failures[doc_id] = str(exc)
                continue
        result.deleted.append(doc_id)
    return indexed


def _record(item: SourceItem) -> dict[str, Any]:
    """What the source's record keeps of an indexed item (its hash is added once known)."""
    return {"version": item.version, "url": item.url, "meta": dict(item.meta),
            **({"groups": list(item.groups)} if item.groups else {})}


def _ingest(source: Source, ingestor: Ingestor, todo: list[tuple[str, SourceItem, bytes, str]], result: SyncResult,
            indexed: dict[str, dict[str, Any]], progress: Callable[[IngestProgress], None]) -> None:
    """The batch through ingest (the versioned swap), each report counted; the batch emptied."""
    if not todo:
        return
    reports = ingestor.ingest_uploads([(item.path, data) for _, item, data, _ in todo], prefix=source.folder,
                                      progress=progress)
    for (doc_id, item, _, digest), report in zip(todo, reports):
        if report.status in ("failed", "skipped"):
            result.failures[doc_id] = report.error or str(report.status)
            continue
        {"added": result.added, "replaced": result.replaced}.get(str(report.status), result.unchanged).append(doc_id)
        indexed[item.path] = {**_record(item), "hash": digest}
    todo.clear()


def _tag_provenance(source: Source, ingestor: Ingestor, items: dict[str, SourceItem],
                    previous: Mapping[str, tuple[str, Mapping[str, Any]]], doc_ids: Sequence[str]) -> None:
    """The documents indexed from the source tagged with it and their URL (`source`, `source_url`:
    scope.PROVENANCE_KEY, which their hits link to), and with the access groups the source gives them (`access`:
    Confluence page restrictions; a document whose groups the source took away loses them), where their tags do
    not say so yet: `docs`, the metadata and `--filter source=NAME` show them; their rows are relabelled in one
    change, without embedding. Unchanged documents too, as a page's restrictions change without a new version. A
    URL too long for a tag stays in the source's record only."""
    store = ingestor.store
    have = store.labels.tags_by_document()
    wanted: dict[str, dict[str, list[str]]] = {}
    for doc_id in sorted(set(doc_ids)):
        item = items[doc_id]
        tags = {"source": [source.name]}
        if item.url and len(item.url) <= MAX_VALUE_CHARS:
            tags[PROVENANCE_KEY] = [item.url]
        if item.groups or previous.get(doc_id, ("", {}))[1].get("groups"):
            tags[ACCESS_KEY] = sorted(item.groups)  # [] removes the key
        if any(have.get(doc_id, {}).get(k, []) != v for k, v in tags.items()):
            wanted[doc_id] = tags
    if not wanted:
        return

    def change(writer: Mapping[str, str]) -> list[str]:
        for doc_id, tags in wanted.items():
            store.labels.set_tags(doc_id, tags, writer=writer)
        return list(wanted)

    relabelled(store, change)
