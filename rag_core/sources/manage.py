"""Adding, syncing and removing a source, the same for every entry point (`sources ...` on the command line, the
`/v1/kbs/{kb}/sources` routes): the checks a new source passes, the reader a sync lists with, and what removing one
with its documents deletes. Each takes what the entry point already holds (its settings, the source book, an open
knowledge base's ingestor and store)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .. import tracing
from ..config import Settings
from ..doc_ids import normalize_doc_id
from ..errors import SourceError
from ..ingest import Ingestor, IngestProgress
from ..ports import ChunkStore, SourceReader
from ..tracing import semconv as sc
from .book import Source, SourceBook, default_name
from .sync import SyncResult, sync
from .types import build_reader, check_type


def cache_of(settings: Settings) -> Path:
    """Where source types keep what they fetch (a Git repository's mirror): the data folder's sources-cache."""
    return settings.data_dir / "sources-cache"


def needs_operator(kind: str, location: str) -> bool:
    """Whether only the server's operator (the admin role on every knowledge base) may add this source from the app or
    over HTTP: one that reads files of the machine that syncs it (a folder, an export, a Git repository at a path or a
    file:// URL), or a `confluence` source, which sends the server's Confluence token (from its environment) to
    whatever base URL it names."""
    where = location.strip().lower()
    remote = where.startswith(("http://", "https://", "ssh://", "git://")) or (
        "@" in where and ":" in where and not where.startswith("file:"))
    return kind in ("folder", "notion-export", "confluence-export", "confluence") or (kind == "git" and not remote)


def new_source(settings: Settings, kb: str, kind: str, location: str, options: Mapping[str, Any], *,
               name: str | None = None, folder: str | None = None) -> Source:
    """The source `sources add` makes, checked (its type, a folder that exists, options its type takes, a folder in
    the knowledge base): not yet in the book, nothing indexed."""
    kind = check_type(kind)
    if kind == "folder":
        if not Path(location).expanduser().is_dir():
            raise SourceError(f"folder {location}: no such folder; check the path")
        location = str(Path(location).expanduser().resolve())
    build_reader(kind, location, options, cache_dir=cache_of(settings))  # options a type refuses are refused now
    space = str(options.get("space") or "") if kind == "confluence" else ""
    name = name or default_name(space or location)  # a Confluence base URL's last part ("wiki") says little
    where = (folder if folder is not None else name).strip().strip("/\\")
    if where:
        where = normalize_doc_id(where)  # spelled as the doc_ids under it are
    if not where:
        raise SourceError("--folder: give the folder its documents go in (a source never fills the whole "
                          "knowledge base, so its deletions stay inside it)")
    return Source(name, kb, kind, location, where, dict(options))


def reader_of(settings: Settings, source: Source) -> SourceReader:
    """The reader a sync of `source` lists with, told what the last sync indexed (for "changed since?")."""
    known = {path: seen.get("version", "") for path, seen in source.indexed.items()}
    return build_reader(source.type, source.location, source.options, known, cache_dir=cache_of(settings))


def sync_source(settings: Settings, book: SourceBook, source: Source, ingestor: Ingestor, *, dry_run: bool = False,
                allow_deletes: bool = False,
                progress: Callable[[IngestProgress], None] = lambda _: None) -> SyncResult:
    """One sync of `source` into the knowledge base `ingestor` writes (sync.sync, with sources.max-delete-share):
    one trace, its counts on the span."""
    with tracing.span("sources.sync", sc.CHAIN, {sc.INPUT_VALUE: source.key, "rag.source.type": source.type,
                                                 "rag.source.dry_run": dry_run}) as span:
        result = sync(source, reader_of(settings, source), ingestor, book,
                      max_delete_share=settings["sources.max-delete-share"], allow_deletes=allow_deletes,
                      dry_run=dry_run, progress=progress)
        tracing.set_attributes(span, {f"rag.source.{k}": v for k, v in result.to_dict().items()
                                      if k in ("added", "replaced", "unchanged", "deleted", "failed")})
        return result


def remove_source(book: SourceBook, source: Source, *, store: ChunkStore | None = None,
                  ingestor: Ingestor | None = None) -> int:
    """Removes `source` from the book; with `store` and `ingestor` (its knowledge base's), deletes its documents
    first (not while a sync of it runs). How many were deleted."""
    deleted = 0
    if store is not None and ingestor is not None:
        with book.sync_lock(source)(wait=False) as held:
            if not held:
                raise SourceError(f"source {source.key}: a sync of it is running; remove it when it ends")
            prefix = source.folder + "/"
            for doc in store.list_documents():
                if doc.doc_id.startswith(prefix) and ingestor.delete(doc.doc_id):
                    deleted += 1
    book.remove(source)
    return deleted

