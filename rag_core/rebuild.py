"""Rebuild a knowledge base whose database is lost or damaged, from its kept originals.

`python -m rag_core --data-dir NEW rebuild --from OLD` re-chunks and re-embeds, into the knowledge base of
the current data dir, the newest committed version of every document whose original OLD kept. The sidecar
next to each kept original names its document (store.originals), so no database is needed; data dirs of
the older layout (`uploads/<collection>/<doc_id>`) are read too. It is `reindex` with another source:
the same pipeline, progress and reports (`Ingestor.reindex`), plus a failed report for every kept file that
cannot be restored (no sidecar, a damaged one, damaged bytes), so nothing is dropped silently.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .config import Settings, originals_dirs
from .errors import RagError
from .ingest import IngestProgress
from .records import IngestReport, IngestStatus
from .store.milvus.schema import check_collection_name
from .store.originals.folder import KeptOriginalsFolder, holds_versions, read_folder, read_legacy_folder
from .workbench import Workbench


@dataclass(frozen=True)
class RebuildResult:
    source: Path  # the folder the kept originals were read from
    layout: str  # "versions" (with sidecars) or "uploads" (an older release's, named by doc_id)
    reports: list[IngestReport]  # one per document, then one per kept file that names no document
    notes: list[str]  # choices made: an older version restored, chunk settings that differ, ...

    @property
    def failed(self) -> int:
        return sum(r.status == "failed" for r in self.reports)

    def to_dict(self) -> dict[str, Any]:
        return {"source": str(self.source), "layout": self.layout, "reports": [r.__dict__ for r in self.reports],
                "notes": self.notes}


def rebuild(settings: Settings, source: Path, collection: str | None = None, *,
            open_workbench: Callable[[Settings], Workbench], force: bool = False,
            progress: Callable[[IngestProgress], None] = lambda p: None) -> RebuildResult:
    """Restore the documents kept in `source` (a data dir, its `originals/`, or one collection's folder of
    kept originals; `collection`: whose, default milvus.collection) into the knowledge base of `settings`,
    opened with `open_workbench` (`bootstrap.build_workbench`) and closed afterwards. Refuses a knowledge base
    that has documents unless `force` (then those found are replaced)."""
    collection = check(settings, source, collection)
    wb = open_workbench(settings)
    try:
        return _rebuild(wb, source, collection, force, progress)
    finally:
        wb.close()


def check(settings: Settings, source: Path, collection: str | None = None) -> str:
    """Refuse a source with nothing to restore (RagError, one line) before anything is opened. Returns the
    collection whose kept originals are read."""
    collection = check_collection_name(collection or settings["milvus.collection"])
    locate(source, collection, settings)
    return collection


def _rebuild(wb: Workbench, source: Path, collection: str, force: bool,
             progress: Callable[[IngestProgress], None]) -> RebuildResult:
    target = wb.settings["milvus.collection"]
    if not force and not wb.store.is_empty():
        count = len(wb.store.list_documents())
        raise RagError(f"The knowledge base {target!r} in {wb.settings.data_dir} already has {count} documents; "
                       "rebuild into a fresh data dir (--data-dir NEW), or pass --force to replace the documents "
                       "found in the kept originals (the others stay).")
    own = {p.resolve() for p in originals_dirs(wb.settings, target).values()}
    # Rebuilding into the data dir the originals are in (its database moved aside): its own versions are
    # not the lost database's.
    exclude = {d.version for d in wb.store.list_documents()}
    folder = locate(source, collection, wb.settings, exclude)
    in_place = folder.root.resolve() in own
    reports = wb.ingestor.reindex(source=folder, progress=progress)
    reports += [IngestReport(u.path, u.doc_id, IngestStatus.FAILED, 0, 0.0, u.reason, u.code) for u in folder.unusable]
    if in_place:  # the restored documents' old versions are now superseded by the new ones
        folder.discard([r.doc_id for r in reports if r.status in ("added", "replaced")])
    return RebuildResult(folder.root, folder.layout, reports, folder.notes + _settings_notes(folder, wb))


def locate(source: Path, collection: str, settings: Settings, exclude: frozenset[str] | set[str] = frozenset()
           ) -> KeptOriginalsFolder:
    """The kept originals of `collection` that `source` names: a data dir, its `originals/` folder, or a
    folder of kept originals itself. Raises RagError with what was looked for when there are none."""
    source = Path(source)
    if not source.exists():
        raise RagError(f"--from {source}: no such folder.")
    if not source.is_dir():
        raise RagError(f"--from {source} is a file; give the data dir of the lost knowledge base (the folder "
                       "holding originals/), or a folder of kept originals.")
    if holds_versions(source):
        return _non_empty(read_folder(source, exclude))
    if holds_versions(source / collection):  # the data dir's originals/ folder
        return _non_empty(read_folder(source / collection, exclude))
    dirs = originals_dirs(dataclasses.replace(settings, data_dir=source), collection)
    versions, legacy = dirs["originals"], dirs["legacy_originals"]
    has_legacy = legacy.is_dir() and any(p.is_file() for p in legacy.rglob("*"))
    if holds_versions(versions):
        folder = read_folder(versions, exclude)
        if has_legacy:  # a release with sidecars opened this data dir and adopted what was current
            folder.unusable.extend(read_legacy_folder(legacy, leftovers=True).unusable)
        return _non_empty(folder)
    if has_legacy:
        return _non_empty(read_legacy_folder(legacy))
    others = sorted(p.name for p in (source / "originals").glob("*") if holds_versions(p))
    hint = f" Kept originals of other collections are there: {', '.join(others)} (pass --collection)." if others else ""
    raise RagError(f"No kept originals of collection {collection!r} in {source} (looked in {versions} and in "
                   f"{legacy}, the older layout).{hint}")


def _non_empty(folder: KeptOriginalsFolder) -> KeptOriginalsFolder:
    if not folder.list_documents() and not folder.unusable:
        raise RagError(f"{folder.root} holds no kept original that could be restored (only files of writes that "
                       "never completed, or of documents being removed).")
    return folder


def _settings_notes(folder: KeptOriginalsFolder, wb: Workbench) -> list[str]:
    """Where the kept versions were indexed with other settings than the target's: their chunks differ."""
    now = wb.ingestor.indexed_with()
    differ: Counter[tuple[str, Any]] = Counter()
    for doc in folder.list_documents():
        kept = folder.kept(doc.doc_id)
        for key, value in (kept.indexed_with if kept else {}).items():
            if key in now and value != now[key]:
                differ[(key, value)] += 1
    notes = []
    for (key, value), count in sorted(differ.items(), key=lambda item: str(item[0])):
        if key.startswith("chunk."):
            notes.append(f"{count} document(s) were indexed with {key} = {value}; this data dir uses {now[key]}, so "
                         f"their chunks differ (for the same chunks: --set {key}={value} and --force)")
        else:
            notes.append(f"{count} document(s) were indexed with {key} {value}; they are now indexed with {now[key]}")
    return notes
