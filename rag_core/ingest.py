"""load -> chunk -> embed -> store, with progress and a report per file.

A document is embedded completely before anything is written, and the store swaps versions atomically
(see rag_core.store.milvus), so a failure at any step leaves the previous version complete and searchable.
Small documents are embedded and written in groups (up to GROUP_CHUNKS chunks): one Milvus round
trip per step for the group instead of per document. If a group fails, its documents are retried one
by one, so a bad document fails alone.
The original bytes of every document read from a file or an upload go to the store with its new
version (kept originals, see rag_core.store.originals), so the knowledge base can be re-indexed (new
chunk settings, new embedder) without the source folder.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from . import chunking, loaders
from .chunk_diff import chunk_diff
from .errors import SKIPPED_CODES, NotIndexed, OriginalMissing, RagError, StoreUnavailableError
from .ports import Embedder, KeptOriginals, KnowledgeStore
from .records import Chunk, ChunkDiff, Document, IngestReport, IngestStatus, NewVersion, WriteResult
from .scope import front_matter
from .store.labels import relabelled

CHUNKER_VERSION = "1"
log = logging.getLogger(__name__)


GROUP_CHUNKS = 256


def embed_by_length(embedder: Embedder, texts: Sequence[str], batch_size: int,
                    on_embedded: Callable[[int], None] = lambda n: None) -> np.ndarray:
    """Embed in batches of similar length, return vectors in input order. The local USE model pads a
    batch to its longest text: 32 chunks of mixed lengths embed at ~40 chunks/s, the same chunks
    sorted by length at ~250-300 chunks/s (2 cores). `on_embedded(n)`: n texts embedded so far."""
    order = sorted(range(len(texts)), key=lambda i: (len(texts[i]), i))
    vectors = np.zeros((len(texts), embedder.dim), dtype=np.float32)
    for start in range(0, len(order), batch_size):
        batch = order[start:start + batch_size]
        part = np.asarray(embedder.embed_documents([texts[i] for i in batch]), dtype=np.float32)
        if part.shape != (len(batch), embedder.dim):
            raise RagError(f"The embedder returned vectors of shape {part.shape}, "
                           f"expected ({len(batch)}, {embedder.dim}).")
        vectors[batch] = part
        on_embedded(start + len(batch))
    return vectors


@dataclass(frozen=True)
class IngestProgress:
    """One step of an ingest run, for progress bars."""

    file_index: int  # 0-based
    files_total: int
    name: str  # doc_id when known, else the path or upload name
    stage: str  # "loading" | "ocr" | "embedding" | "done" | "failed" | "skipped"
    done: int = 0  # chunks embedded so far in this file (stage "ocr": pages read by OCR so far)
    total: int = 0  # chunks in this file (stage "ocr": pages to read by OCR)
    fraction: float = 0.0  # overall progress across all files, 0..1, never decreasing


ProgressCallback = Callable[[IngestProgress], None]


@dataclass(frozen=True)
class IngestTally:
    """A run's overall progress in files and chunks, folded from its `IngestProgress` events (`add`): files finished
    (done, failed or skipped) of all, and chunks embedded of the chunks to embed. Files are read first and embedded
    together in groups, so a file's chunks count from its group's first embedding event: `chunks` grows as groups
    start, and a file left unchanged (done without embedding) adds none. `reading`: the file being read, when a file
    is being read and none is being embedded."""

    files: int = 0
    finished: frozenset[int] = frozenset()
    embedding: tuple[tuple[int, int, int], ...] = ()  # (file index, chunks embedded, its chunks), one per file
    reading: int | None = None

    def add(self, p: IngestProgress) -> IngestTally:
        embedding = {index: (done, total) for index, done, total in self.embedding}
        finished, reading = set(self.finished), self.reading
        if p.stage in ("loading", "ocr"):
            reading = p.file_index
        elif p.stage == "embedding":
            embedding[p.file_index], reading = (p.done, p.total), None
        elif p.stage == "done":
            finished.add(p.file_index)
            if p.file_index in embedding:
                embedding[p.file_index] = (p.total, p.total)
        else:  # failed or skipped: its chunks will not be embedded
            finished.add(p.file_index)
            embedding.pop(p.file_index, None)
        if reading in finished:
            reading = None
        return IngestTally(p.files_total, frozenset(finished),
                           tuple((index, done, total) for index, (done, total) in sorted(embedding.items())), reading)

    @property
    def files_done(self) -> int:
        return len(self.finished)

    @property
    def chunks_embedded(self) -> int:
        return sum(done for _, done, _ in self.embedding)

    @property
    def chunks(self) -> int:
        return sum(total for _, _, total in self.embedding)

    @property
    def chunk_fraction(self) -> float:
        """Chunks embedded of the chunks known so far (0 when none are known yet)."""
        return self.chunks_embedded / self.chunks if self.chunks else 0.0


def ocr_step(done: int, total: int) -> str:
    """An OCR progress bar's text: "OCR page 3/12" while page 3 is read, "OCR done, 12 pages" at the end."""
    return f"OCR page {done + 1}/{total}" if done < total else f"OCR done, {total} page{'s' * (total != 1)}"


def _ignore(_: IngestProgress) -> None:
    pass


class DocLocks:
    """One lock per doc_id, made on demand and dropped when no run holds or waits for it.

    Streamlit sessions share one cached workbench, so one Ingestor: two sessions replacing the same
    document would both read the old fingerprint, both embed and both commit (the first version left
    behind until the next recovery, and an unchanged re-upload written twice). Holding the document's
    lock from the fingerprint check to the commit makes the second wait, then find it unchanged.
    This serialises writers in one process; other processes are the store's business (its recovery)."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[str, tuple[threading.Lock, int]] = {}  # doc_id -> (lock, runs holding or waiting)

    @contextmanager
    def hold(self, doc_ids: Iterable[str]) -> Iterator[None]:
        ids = sorted(set(doc_ids))  # one global order, so two runs never wait for each other in a circle
        with self._guard:
            for doc_id in ids:
                lock, users = self._locks.get(doc_id, (threading.Lock(), 0))
                self._locks[doc_id] = (lock, users + 1)
            locks = [self._locks[doc_id][0] for doc_id in ids]
        taken: list[threading.Lock] = []
        try:
            for lock in locks:
                lock.acquire()
                taken.append(lock)
            yield
        finally:
            for lock in reversed(taken):
                lock.release()
            with self._guard:
                for doc_id in ids:
                    lock, users = self._locks[doc_id]
                    if users == 1:
                        del self._locks[doc_id]
                    else:
                        self._locks[doc_id] = (lock, users - 1)


@dataclass(frozen=True)
class Source:
    """Something to ingest: a file on disk (with the folder it was found in), uploaded bytes, a loaded
    document, or a document to rebuild from its kept original."""

    name: str  # shown in reports: a path, an upload name, or the doc_id of a kept original
    path: Path | None = None
    root: Path | None = None
    data: bytes | None = None
    document: Document | None = None  # already loaded
    kept_in: KeptOriginals | None = None  # rebuild `name` from its original kept there
    failure: Exception | None = None  # why it cannot even be read (a path that could not be listed ...)


def _chunk_hashes(prepared: _Prepared) -> dict[str, str]:
    """evidence key -> content hash (as the chunk rows' chunkHash) of a new version's chunks."""
    return {f"{prepared.doc.doc_id}#chunk-{c.chunk_index}": hashlib.sha256(c.text.encode()).hexdigest()
            for c in prepared.chunks}


class Ingestor:
    def __init__(self, store: KnowledgeStore, embedder: Embedder, *, max_size: int = 800, overlap: int = 100,
                 max_bytes: int = 50 * 1024 * 1024, batch_size: int = 32,
                 group_chunks: int = GROUP_CHUNKS, max_text_chars: int = loaders.DEFAULT_MAX_TEXT_CHARS,
                 load_options: loaders.LoadOptions | None = None) -> None:
        self.store = store
        self.embedder = embedder
        self.max_size = max_size
        self.overlap = overlap
        self.max_bytes = max_bytes
        self.max_text_chars = max_text_chars
        self.load_options = load_options or loaders.LoadOptions()
        self.batch_size = batch_size
        self.group_chunks = group_chunks
        self._locks = DocLocks()

    # ------------------------------------------------------------------ entry points
    def ingest_paths(self, paths: Sequence[str | os.PathLike[str]], *, prefix: str = "",
                     progress: ProgressCallback = _ignore, force: bool = False) -> list[IngestReport]:
        """Files or folders (recursive). A missing path is reported as failed, not raised."""
        sources: list[Source] = []
        for raw in paths:
            try:
                sources += [Source(str(f), path=f, root=root) for f, root in loaders.iter_files([Path(raw)])]
            except RagError as exc:
                sources.append(Source(str(raw), failure=exc))
        return self._run(sources, prefix, progress, force)

    def ingest_uploads(self, uploads: Iterable[tuple[str, bytes]], *, prefix: str = "",
                       progress: ProgressCallback = _ignore, force: bool = False) -> list[IngestReport]:
        """(file name, bytes) pairs, e.g. from a browser upload; doc_id = prefix/name."""
        return self._run([Source(name, data=data) for name, data in uploads], prefix, progress, force)

    def ingest_documents(self, docs: Sequence[Document], *, progress: ProgressCallback = _ignore,
                         force: bool = False) -> list[IngestReport]:
        """Already loaded documents (e.g. an evaluation corpus). No originals are kept for them."""
        return self._run([Source(d.doc_id, document=d) for d in docs], "", progress, force)

    def reindex(self, doc_ids: Iterable[str] | None = None, *, source: KeptOriginals | None = None,
                progress: ProgressCallback = _ignore) -> list[IngestReport]:
        """Re-chunk and re-embed documents from their kept originals in `source` (default: this knowledge
        base; another one to copy it, e.g. into a collection for a new embedder; a folder of kept originals
        to rebuild a lost one, see rag_core.rebuild): all of its documents, or the named ones. Every
        document that cannot be rebuilt (not indexed there, no kept original, an original that no longer
        loads) is reported as failed with the reason."""
        kept: KeptOriginals = self.store if source is None else source
        listed = {d.doc_id for d in kept.list_documents()}
        sources: list[Source] = []
        for raw in sorted(listed) if doc_ids is None else doc_ids:
            try:
                doc_id = self._resolve(raw, listed)
            except RagError as exc:
                sources.append(Source(raw, failure=exc))
                continue
            if doc_id in listed:
                sources.append(Source(doc_id, kept_in=kept))
            else:
                sources.append(Source(raw, failure=NotIndexed(
                    f"{raw}: no such document in the knowledge base (`docs` lists them)")))
        reports = self._run(sources, "", progress, force=True)
        copied = {r.doc_id for r in reports if r.status in ("added", "replaced")}
        theirs, mine = kept.labels, self.store.labels
        if theirs is not None and kept is not self.store:  # kb copy, reindex --from
            relabelled(self.store, lambda writer: mine.copy_tags(theirs, sorted(copied), writer))
        if kept is not self.store:  # kb copy, reindex --from, rebuild --from: their chunk edits, applied here
            from .kb.chunk_edits import copy_edits

            copy_edits(kept, self.store, self.embedder, copied)
        return reports

    def resolve_doc_id(self, raw: str) -> str:
        """The doc_id a user's argument names: itself when a document has exactly that id, else the id
        ingest gives a file of that name (`./a.md` -> `a.md`, `back\\slash.md` -> `back/slash.md`).
        Raises LoaderError for a name ingest would refuse (`../x.md`)."""
        return self._resolve(raw, self.store.fingerprints([raw]))

    @staticmethod
    def _resolve(raw: str, indexed: Iterable[str]) -> str:
        return raw if raw in indexed else loaders.normalize_doc_id(raw)

    def delete(self, doc_id: str) -> bool:
        """Remove a document (named as `resolve_doc_id` reads it) with its chunks and kept original."""
        doc_id = self.resolve_doc_id(doc_id)
        with self._locks.hold([doc_id]):
            return self.store.delete_document(doc_id)

    def original(self, doc_id: str) -> bytes | None:
        """The kept original of a document's indexed version, None when none is kept."""
        return self.store.read_original(doc_id)

    # ------------------------------------------------------------------ the pipeline
    def _run(self, sources: list[Source], prefix: str, progress: ProgressCallback, force: bool) -> list[IngestReport]:
        run = _Run(len(sources), progress, [_size(s) for s in sources])
        group: list[_Prepared] = []
        try:
            self._run_sources(sources, prefix, force, run, group)
        except StoreUnavailableError as exc:
            # The store went away (its server died or was stopped): one failure, not one per file.
            run.stop(sources, group, exc)
        return run.ordered_reports()

    def _run_sources(self, sources: list[Source], prefix: str, force: bool, run: _Run,
                     group: list[_Prepared]) -> None:
        for index, source in enumerate(sources):
            run.tick(index, source.name, "loading")
            started = time.perf_counter()
            doc_id = source.name if source.kept_in is not None else ""  # a kept original is named by it
            try:
                doc, original = self._load(source, prefix, run.ocr_ticker(index, source.name))
                doc_id = doc.doc_id
                chunks = chunking.chunk_document(doc, self.max_size, self.overlap)
                if not chunks:
                    raise RagError(f"{doc.doc_id}: the document has no text to index.")
            except Exception as exc:  # noqa: BLE001 - one file's failure must not stop the others
                run.fail(index, source.name, doc_id, time.perf_counter() - started, exc)
                continue
            item = _Prepared(index, source, doc, chunks, self.fingerprint(doc), original,
                             time.perf_counter() - started)
            if (
                any(g.doc.doc_id == doc.doc_id for g in group)
                or sum(len(g.chunks) for g in group) + len(chunks) > self.group_chunks
            ):
                self._ingest_group(group, run, force)
                group.clear()
            group.append(item)
        self._ingest_group(group, run, force)

    def _ingest_group(self, group: list[_Prepared], run: _Run, force: bool) -> None:
        if not group:
            return
        started = time.perf_counter()
        try:
            with self._locks.hold(g.doc.doc_id for g in group):
                written = self._write_group(group, run, force)
        except Exception as exc:  # noqa: BLE001
            if isinstance(exc, StoreUnavailableError):
                raise  # no culprit to find: the store is gone (see _run)
            if len(group) > 1:  # find the culprit: the others should not fail with it
                for g in group:
                    self._ingest_group([g], run, force)
                return
            g = group[0]
            run.fail(g.index, g.source.name, g.doc.doc_id, g.load_seconds + time.perf_counter() - started, exc)
            return
        elapsed, chunks = time.perf_counter() - started, sum(len(g.chunks) for g, _, _ in written)
        for g, result, diff in written:
            # A file's share of the group's time, by chunks.
            status = IngestStatus.REPLACED if result.replaced else IngestStatus.ADDED
            run.finish(g, status, len(g.chunks), elapsed * len(g.chunks) / chunks, diff if result.replaced else None)

    def _write_group(self, group: list[_Prepared], run: _Run,
                     force: bool) -> list[tuple[_Prepared, WriteResult, ChunkDiff | None]]:
        """Unchanged documents are reported; the others embedded and written, each replaced one with what changed
        in its chunks. Runs holding the group's doc_id locks, so the fingerprints and chunks read here are still
        current when the new versions commit."""
        current = self.store.fingerprints(g.doc.doc_id for g in group)
        # Unchanged: the same fingerprint, and the original kept when there is one to keep (a version
        # indexed without it, e.g. by an older release, gets a new version that keeps it).
        unchanged = [] if force else [
            g for g in group if g.doc.doc_id in current and current[g.doc.doc_id].fingerprint == g.fingerprint
            and (g.original is None or current[g.doc.doc_id].has_original)]
        for g in unchanged:
            n = current[g.doc.doc_id].chunks
            run.finish(g, IngestStatus.UNCHANGED, n, 0.0, ChunkDiff(unchanged=n))
        todo = [g for g in group if g not in unchanged]
        if not todo:
            return []
        diffs = [chunk_diff(self.store.get_chunks(g.doc.doc_id), g.chunks) if g.doc.doc_id in current else None
                 for g in todo]  # read before the new versions retire the old ones
        vectors = self._embed([c.search_text or c.text for g in todo for c in g.chunks], run.embedding_ticker(todo))
        offsets = np.cumsum([0] + [len(g.chunks) for g in todo])
        edits = self.store.edits
        # From the commit to re-applying the edits, under the lock chunk edits take in every process (kb.chunk_edits):
        # an edit made meanwhile is recorded before the commit and re-applied, or made on the new version.
        with edits.lock():
            # their edits are written onto the new versions after the commit: marked until then (chunk_edits.resume)
            marked = edits.mark_unapplied([g.doc.doc_id for g in todo], True)
            results = self._replace(todo, vectors, offsets)
            # edits whose chunk now holds other text stop applying: say which; re-apply the rest
            diffs = [replace(d, conflicts=tuple(edits.conflicts(_chunk_hashes(g), g.doc.doc_id))) if d is not None
                     else None
                     for g, d in zip(todo, diffs)]
            from .kb.chunk_edits import reapply

            reapply(self.store, self.embedder, [g.doc.doc_id for g in todo])
            if marked:
                edits.mark_unapplied([g.doc.doc_id for g in todo], False)
        return list(zip(todo, results, diffs))

    def _replace(self, todo: list[_Prepared], vectors: np.ndarray, offsets: np.ndarray) -> list[WriteResult]:
        """The new versions written, their rows carrying their labels: what the loader found (Document.fields) and
        front matter read from each (and the tags it has), for metadata filters (scope). The labels file takes the
        front matter as a pending mark first (store.labels), so a kill after the commit still gives the file the
        version's front matter."""
        labels = self.store.labels
        fields = {g.doc.doc_id: {**g.doc.fields, **front_matter(g.doc.text)} for g in todo}
        own = labels.of(fields)
        items = [NewVersion(g.doc, g.chunks, vectors[offsets[i]:offsets[i + 1]], g.fingerprint, g.original,
                            self.indexed_with(), own.get(g.doc.doc_id, {}))
                 for i, g in enumerate(todo)]
        ids = [g.doc.doc_id for g in todo]
        # under the knowledge base's change lock: an embedder upgrade's swap (kb.upgrade) never misses a version
        with self.store.lock(), self.store.editing() as writer:
            labels.begin({g.doc.doc_id: (fields[g.doc.doc_id], g.doc.content_hash) for g in todo}, writer)
            results = self.store.replace_documents(items)
            labels.finish(ids)
            # tags changed while the versions were written: their rows follow the file
            now = labels.of(dict.fromkeys(ids))
            if changed := [item.doc.doc_id for item in items if now[item.doc.doc_id] != item.labels]:
                self.store.relabel(changed)
        return results

    def _embed(self, texts: list[str], on_embedded: Callable[[int], None]) -> np.ndarray:
        return embed_by_length(self.embedder, texts, self.batch_size, on_embedded)

    def _load(self, source: Source, prefix: str,
              on_page: Callable[[int, int], None] | None = None) -> tuple[Document, bytes | None]:
        """The document and the bytes to keep as its original (None: loaded already, nothing to keep).
        `on_page(done, total)`: pages read by OCR so far, for progress."""
        if source.document is not None:
            return source.document, None
        if source.kept_in is not None:
            data = source.kept_in.read_original(source.name)
            if data is None:
                raise OriginalMissing(f"{source.name}: its original file is not kept (lost, or it was indexed "
                                      "from text), so it cannot be rebuilt; ingest it again from its file")
            # The kept original keeps its doc_id exactly, even one ingest would now spell differently.
            return replace(self._load_bytes(data, source.name, on_page), doc_id=source.name), data
        if source.data is not None:
            # An upload's name is used as given (normalised, `..` and absolute paths refused), so a
            # browser upload of "cpu_high.md" into folder "runbooks" gets "runbooks/cpu_high.md".
            doc_id = loaders.join_doc_id(prefix, source.name)
            doc = self._load_bytes(source.data, doc_id, on_page)
            return self._earlier_spelling(doc, loaders.legacy_doc_id(source.name, prefix)), source.data
        if source.path is None:
            raise source.failure or RagError(f"{source.name}: nothing to read")
        # The bytes decoded are the bytes kept: the file is read once (a second read could see another file).
        doc_id, data = loaders.read_path(source.path, source.root, prefix=prefix, max_bytes=self.max_bytes)
        try:
            legacy = loaders.doc_id_for(source.path, source.root, prefix, fold=False)
        except RagError:
            legacy = ""
        return self._earlier_spelling(self._load_bytes(data, doc_id, on_page), legacy), data

    def _earlier_spelling(self, doc: Document, legacy: str) -> Document:
        """`doc`, or `doc` under the id an earlier release gave its name (`legacy`, see doc_ids) when a
        document has that id and none has the new one: it is replaced, not joined by a twin that reads the same.
        Asks the registry only for the few names the new rule spells differently."""
        if not legacy or legacy == doc.doc_id:
            return doc
        indexed = self.store.fingerprints([doc.doc_id, legacy])
        return replace(doc, doc_id=legacy) if legacy in indexed and doc.doc_id not in indexed else doc

    def _load_bytes(self, data: bytes, doc_id: str, on_page: Callable[[int, int], None] | None = None) -> Document:
        options = replace(self.load_options, on_page=on_page) if on_page is not None else self.load_options
        return loaders.load_bytes(data, doc_id, max_bytes=self.max_bytes, max_text_chars=self.max_text_chars,
                                  options=options)

    def indexed_with(self) -> dict[str, str | int]:
        """The settings a new version is indexed with (what `fingerprint` hashes, besides the content)."""
        return {"chunk.max-size": self.max_size, "chunk.overlap": self.overlap, "embedder": self.embedder.name,
                "chunker": CHUNKER_VERSION}

    def fingerprint(self, doc: Document) -> str:
        """What makes an indexed version current: content, chunking and embedder."""
        return fingerprint(doc.content_hash, self.max_size, self.overlap, self.embedder.name)


def fingerprint(content_hash: str, max_size: int, overlap: int, embedder_name: str) -> str:
    """An indexed version's fingerprint (registry `fingerprint`): content, chunking, embedder, chunker."""
    key = f"{content_hash}|{max_size}|{overlap}|{embedder_name}|{CHUNKER_VERSION}"
    return hashlib.sha256(key.encode()).hexdigest()[:32]


@dataclass(frozen=True)
class _Prepared:
    """A loaded and chunked document waiting to be embedded and written."""

    index: int
    source: Source
    doc: Document
    chunks: list[Chunk]
    fingerprint: str
    original: bytes | None  # to keep with the new version
    load_seconds: float


def _size(source: Source) -> float:
    """How much of a run's work a source is, for its progress: its characters or bytes (at least 1), so the
    bar and its estimate hold for documents of very different sizes (one book among a hundred notes)."""
    if source.document is not None:
        return max(1, len(source.document.text))
    if source.data is not None:
        return max(1, len(source.data))
    try:
        return max(1, source.path.stat().st_size) if source.path is not None else 1
    except OSError:
        return 1


class _Run:
    """Reports and progress of one ingest run. The overall fraction counts the size (characters or bytes) of
    the finished files plus the embedded share of the files in the group being embedded, so it never goes back."""

    def __init__(self, total: int, progress: ProgressCallback, sizes: Sequence[float] | None = None) -> None:
        self.total = total
        self.progress = progress
        self.sizes = list(sizes) if sizes is not None else [1.0] * total
        self.whole = max(1.0, sum(self.sizes))
        self.reports: dict[int, IngestReport] = {}
        self.finished = 0.0  # size of the files reported
        self.partial = 0.0  # embedded share of unfinished files, in size
        self.shown = 0.0

    def _fraction(self) -> float:
        # max(): a group that failed and is retried file by file must not move the bar back
        self.shown = max(self.shown, min(1.0, (self.finished + self.partial) / self.whole))
        return self.shown

    def _report(self, index: int, report: IngestReport) -> None:
        if index not in self.reports and index < len(self.sizes):
            self.finished += self.sizes[index]
        self.reports[index] = report

    def tick(self, index: int, name: str, stage: str, done: int = 0, total: int = 0) -> None:
        self.progress(IngestProgress(index, self.total, name, stage, done, total, self._fraction()))

    def ocr_ticker(self, index: int, name: str) -> Callable[[int, int], None]:
        """Turns "n of m pages read by OCR" into progress events of stage "ocr" for one file."""
        return lambda done, total: self.tick(index, name, "ocr", done, total)

    def embedding_ticker(self, group: list[_Prepared]) -> Callable[[int], None]:
        """Turns "n chunks of the group embedded" into per-file embedding events. The group's chunks
        are embedded sorted by length, so each file is credited its share of the group's progress."""
        total = sum(len(g.chunks) for g in group)

        def on_embedded(embedded: int) -> None:
            share = embedded / total
            self.partial = share * sum(self.sizes[g.index] for g in group)
            for g in group:
                self.tick(g.index, g.doc.doc_id, "embedding", round(share * len(g.chunks)), len(g.chunks))

        on_embedded(0)
        return on_embedded

    def finish(self, item: _Prepared, status: IngestStatus, chunks: int, seconds: float,
               diff: ChunkDiff | None = None) -> None:
        self.partial = max(0.0, self.partial - self.sizes[item.index])
        self._report(item.index, IngestReport(item.source.name, item.doc.doc_id, status, chunks,
                                              item.load_seconds + seconds, diff=diff, notes=item.doc.notes,
                                              note_phrases=item.doc.note_phrases))
        self.tick(item.index, item.doc.doc_id, "done", chunks, chunks)

    def fail(self, index: int, name: str, doc_id: str, seconds: float, exc: Exception) -> None:
        if not isinstance(exc, RagError):
            log.exception("ingesting %s failed", name)
        message = str(exc) if isinstance(exc, RagError) else f"unexpected error ({type(exc).__name__}: {exc})"
        code = getattr(exc, "code", "")  # e.g. a loader's "too_large": the HTTP API maps it to a status
        code = code if isinstance(code, str) else ""
        status = IngestStatus.SKIPPED if code in SKIPPED_CODES else IngestStatus.FAILED
        self._report(index, IngestReport(name, doc_id, status, 0, seconds, message, code))
        self.tick(index, doc_id or name, status)

    def stop(self, sources: Sequence[Source], group: list[_Prepared], exc: StoreUnavailableError) -> None:
        """The store failed: its message once (on the first file being written), the other files of that
        write as not written, the rest as not attempted."""
        message, code = str(exc), exc.code
        for g in group:
            if g.index not in self.reports:
                self._report(g.index, IngestReport(g.source.name, g.doc.doc_id, IngestStatus.FAILED, 0, g.load_seconds,
                                                   message or "not written: the store failed during this write",
                                                   code or "not_attempted"))
                message, code = "", ""
        for index, source in enumerate(sources):
            if index not in self.reports:
                self._report(index, IngestReport(source.name, "", IngestStatus.FAILED, 0, 0.0,
                                                 message or "not attempted: the store failed earlier in this run",
                                                 code or "not_attempted"))
                message, code = "", ""

    def ordered_reports(self) -> list[IngestReport]:
        return [self.reports[i] for i in sorted(self.reports)]
