"""load -> chunk -> embed -> store, one document at a time, with progress and a report per file.

A document is embedded completely before anything is written, and the store swaps versions atomically
(see store.milvus), so a failure at any step leaves the previous version complete and searchable.
The original bytes of every indexed document are kept under `<data-dir>/uploads/<collection>/<doc_id>`
so the knowledge base can be re-indexed (new chunk settings, new embedder) without the source folder.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Sequence

import numpy as np

from . import chunking, loaders
from .embedding import Embedder
from .errors import RagError
from .records import Document, IngestReport
from .store.milvus import MilvusStore

CHUNKER_VERSION = "1"
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class IngestProgress:
    """One step of an ingest run, for progress bars."""

    file_index: int  # 0-based
    files_total: int
    name: str  # doc_id when known, else the path or upload name
    stage: str  # "loading" | "embedding" | "writing" | "done" | "failed"
    done: int = 0  # chunks embedded so far in this file
    total: int = 0  # chunks in this file

    @property
    def fraction(self) -> float:
        """Overall progress across all files, 0..1."""
        within = 1.0 if self.stage in ("done", "failed") else (self.done / self.total if self.total else 0.0)
        return min(1.0, (self.file_index + within) / max(1, self.files_total))


ProgressCallback = Callable[[IngestProgress], None]


def _ignore(_: IngestProgress) -> None:
    pass


@dataclass(frozen=True)
class Source:
    """Something to ingest: a file on disk (with the folder it was found in) or uploaded bytes."""

    name: str  # shown in reports: a path or an upload name
    path: Path | None = None
    root: Path | None = None
    data: bytes | None = None
    document: Document | None = None  # already loaded
    error: str = ""  # set when the path itself could not be listed


class Ingestor:
    def __init__(self, store: MilvusStore, embedder: Embedder, *, max_size: int = 800, overlap: int = 100,
                 max_bytes: int = 50 * 1024 * 1024, batch_size: int = 32, uploads_dir: Path | None = None) -> None:
        self.store = store
        self.embedder = embedder
        self.max_size = max_size
        self.overlap = overlap
        self.max_bytes = max_bytes
        self.batch_size = batch_size
        self.uploads_dir = uploads_dir

    # ------------------------------------------------------------------ entry points
    def ingest_paths(self, paths: Sequence[str | os.PathLike[str]], *, prefix: str = "",
                     progress: ProgressCallback = _ignore, force: bool = False) -> list[IngestReport]:
        """Files or folders (recursive). A missing path is reported as failed, not raised."""
        sources: list[Source] = []
        for raw in paths:
            try:
                sources += [Source(str(f), path=f, root=root) for f, root in loaders.iter_files([Path(raw)])]
            except RagError as exc:
                sources.append(Source(str(raw), error=str(exc)))
        return self._run(sources, prefix, progress, force)

    def ingest_uploads(self, uploads: Iterable[tuple[str, bytes]], *, prefix: str = "",
                       progress: ProgressCallback = _ignore, force: bool = False) -> list[IngestReport]:
        """(file name, bytes) pairs, e.g. from a browser upload; doc_id = prefix/name."""
        return self._run([Source(name, data=data) for name, data in uploads], prefix, progress, force)

    def ingest_documents(self, docs: Sequence[Document], *, progress: ProgressCallback = _ignore,
                         force: bool = False) -> list[IngestReport]:
        """Already loaded documents (e.g. an evaluation corpus). No originals are kept for them."""
        return self._run([Source(d.doc_id, document=d) for d in docs], "", progress, force)

    def reindex(self, doc_ids: Iterable[str] | None = None, *, from_collection: str | None = None,
                progress: ProgressCallback = _ignore) -> list[IngestReport]:
        """Re-chunk and re-embed documents from their kept originals (all when doc_ids is None)."""
        folder = self._uploads(from_collection or self.store.collection)
        if folder is None or not folder.is_dir():
            raise RagError(f"No kept originals in {folder}: ingest the documents again from their files.")
        wanted = set(doc_ids) if doc_ids is not None else None
        sources = [Source(f.relative_to(folder).as_posix(), path=f, root=folder)
                   for f, _ in loaders.iter_files([folder])
                   if wanted is None or f.relative_to(folder).as_posix() in wanted]
        return self._run(sources, "", progress, force=True)

    def delete(self, doc_id: str) -> bool:
        deleted = self.store.delete_document(doc_id)
        kept = self._original_path(doc_id)
        if kept is not None and kept.is_file():
            kept.unlink()
        return deleted

    # ------------------------------------------------------------------ the pipeline
    def _run(self, sources: list[Source], prefix: str, progress: ProgressCallback, force: bool) -> list[IngestReport]:
        reports = []
        for index, source in enumerate(sources):
            started = time.perf_counter()
            tick = lambda stage, name, done=0, total=0: progress(  # noqa: E731
                IngestProgress(index, len(sources), name, stage, done, total))
            doc_id = ""
            try:
                tick("loading", source.name)
                doc = self._load(source, prefix)
                doc_id = doc.doc_id
                status, chunks = self._ingest_document(doc, source, force, lambda d, t: tick("embedding", doc_id, d, t))
                report = IngestReport(source.name, doc_id, status, chunks, time.perf_counter() - started)
                tick("done", doc_id, chunks, chunks)
            except Exception as exc:  # noqa: BLE001 - one file's failure must not stop the others
                if not isinstance(exc, RagError):
                    log.exception("ingesting %s failed", source.name)
                message = str(exc) if isinstance(exc, RagError) else f"unexpected error ({type(exc).__name__}: {exc})"
                report = IngestReport(source.name, doc_id, "failed", 0, time.perf_counter() - started, message)
                tick("failed", doc_id or source.name)
            reports.append(report)
        return reports

    def _load(self, source: Source, prefix: str) -> Document:
        if source.document is not None:
            return source.document
        if source.data is not None:
            # An upload's name is used as given (normalised, `..` and absolute paths refused), so a
            # browser upload of "cpu_high.md" into folder "runbooks" gets "runbooks/cpu_high.md".
            folder = prefix.strip().strip("/\\")
            doc_id = loaders.normalize_doc_id(f"{folder}/{source.name}" if folder else source.name)
            return loaders.load_bytes(source.data, doc_id, max_bytes=self.max_bytes)
        if source.path is None:
            raise RagError(source.error)
        return loaders.load_path(source.path, source.root, prefix=prefix, max_bytes=self.max_bytes)

    def fingerprint(self, doc: Document) -> str:
        """What makes an indexed version current: content, chunking and embedder."""
        key = f"{doc.content_hash}|{self.max_size}|{self.overlap}|{self.embedder.name}|{CHUNKER_VERSION}"
        return hashlib.sha256(key.encode()).hexdigest()[:32]

    def _ingest_document(self, doc: Document, source: Source, force: bool,
                         on_embedded: Callable[[int, int], None]) -> tuple[str, int]:
        fingerprint = self.fingerprint(doc)
        if not force and self.store.fingerprint_of(doc.doc_id) == fingerprint:
            self._keep_original(doc.doc_id, source)
            return "unchanged", len(self.store.get_chunks(doc.doc_id))
        chunks = chunking.chunk_text(doc.text, self.max_size, self.overlap)
        if not chunks:
            raise RagError(f"{doc.doc_id}: the document has no text to index.")
        vectors = self._embed([c.text for c in chunks], on_embedded)
        result = self.store.replace_document(doc, chunks, vectors, fingerprint)
        self._keep_original(doc.doc_id, source)
        return ("replaced" if result.replaced else "added"), len(chunks)

    def _embed(self, texts: list[str], on_embedded: Callable[[int, int], None]) -> np.ndarray:
        parts = []
        on_embedded(0, len(texts))
        for start in range(0, len(texts), self.batch_size):
            parts.append(self.embedder.embed_documents(texts[start:start + self.batch_size]))
            on_embedded(min(len(texts), start + self.batch_size), len(texts))
        vectors = np.concatenate(parts).astype(np.float32)
        if vectors.shape != (len(texts), self.embedder.dim):
            raise RagError(f"The embedder returned vectors of shape {vectors.shape}, "
                           f"expected ({len(texts)}, {self.embedder.dim}).")
        return vectors

    # ------------------------------------------------------------------ kept originals
    def _uploads(self, collection: str) -> Path | None:
        return self.uploads_dir / collection if self.uploads_dir is not None else None

    def _original_path(self, doc_id: str) -> Path | None:
        folder = self._uploads(self.store.collection)
        return folder / doc_id if folder is not None else None

    def _keep_original(self, doc_id: str, source: Source) -> None:
        target = self._original_path(doc_id)
        if target is None or source.document is not None or (source.path is not None and source.path.resolve() == target.resolve()):
            return
        data = source.data if source.data is not None else source.path.read_bytes()  # type: ignore[union-attr]
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(target.name + ".partial")
        partial.write_bytes(data)
        os.replace(partial, target)  # atomic: a kept original is always a whole file

    def original(self, doc_id: str) -> bytes | None:
        path = self._original_path(doc_id)
        return path.read_bytes() if path is not None and path.is_file() else None
