"""Index an evaluation corpus into an isolated Milvus Lite database, reusing it across runs.

The database is `<data-dir>/eval/milvus.db`, never the app's `<data-dir>/milvus.db` (which the app may
hold open: Milvus Lite allows one process per file). The collection is named from a hash of what
determines its content — the corpus slice (every doc id and content hash, which identifies the set and
its slice), chunk size, overlap, chunker version and embedder — so a repeated run finds it complete and
skips indexing, another query set over the same documents (e.g. an uploaded set over the sample KB)
reuses it, and an interrupted run resumes with the documents that are missing.

The index is opened by `bootstrap.open_eval_store` (the `open_eval_store` of the `Factories` a run is given).
`bulk_index` runs the ingest pipeline itself (`Ingestor.ingest_documents`: chunks embedded in
length-sorted batches across documents, written with the store's versioned replace), so what is
evaluated is exactly what the knowledge base would hold.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..config import Settings
from ..errors import EvaluationError
from ..ingest import CHUNKER_VERSION, Ingestor
from ..ports import Embedder, KnowledgeStore
from ..records import Document

GROUP_CHUNKS = 1024  # chunks embedded together before their documents are written (resume granularity)


@dataclass(frozen=True)
class IndexStats:
    collection: str
    documents: int
    chunks: int
    indexed_documents: int  # documents (re)written by this run; 0 when the index was reused
    indexed_chunks: int
    seconds: float


def eval_db_path(settings: Settings) -> Path:
    return settings.data_dir / "eval" / "milvus.db"


def collection_name(documents: Sequence[Document], chunk_size: int, overlap: int, embedder_name: str) -> str:
    digest = hashlib.sha256()
    for part in (str(chunk_size), str(overlap), embedder_name, CHUNKER_VERSION):
        digest.update(part.encode("utf-8") + b"\x00")
    for doc in sorted(documents, key=lambda d: d.doc_id):
        digest.update(f"{doc.doc_id}\x00{doc.content_hash}\x00".encode())
    return f"eval_{digest.hexdigest()[:20]}"


def bulk_index(store: KnowledgeStore, embedder: Embedder, documents: Sequence[Document], *, chunk_size: int,
               overlap: int, batch_size: int = 32,
               progress: Callable[[int, int], None] = lambda done, total: None) -> tuple[int, int, int]:
    """Make `store` hold exactly `documents` chunked at (chunk_size, overlap); documents already stored
    with the same content are kept. Returns (total chunks, documents written, chunks written).
    `progress(done, total)` counts characters, so its estimate holds when a few documents are most of the text."""
    wanted = {d.doc_id for d in documents}
    for doc_id in sorted({d.doc_id for d in store.list_documents()} - wanted):
        store.delete_document(doc_id)
    ingestor = Ingestor(store, embedder, max_size=chunk_size, overlap=overlap, batch_size=batch_size,
                        max_bytes=2**62, group_chunks=GROUP_CHUNKS)
    total = sum(max(1, len(d.text)) for d in documents)
    progress(0, total)
    reports = ingestor.ingest_documents(documents, progress=lambda p: progress(round(p.fraction * total), total))
    failed = [r for r in reports if r.status == "failed"]
    if failed:
        raise EvaluationError(f"{len(failed)} document(s) could not be indexed; first: {failed[0].error}")
    written = [r for r in reports if r.status in ("added", "replaced")]
    return sum(r.chunks for r in reports), len(written), sum(r.chunks for r in written)
