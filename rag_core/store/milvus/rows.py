"""What a stored chunk carries, the same in every ChunkStore: its id, its metadata, and the SearchHit
a search makes of it. The metadata keys are the seed's (`_source`, `_extension`, `_file_name`,
`chunkIndex`, `totalChunks`, `title`) plus what the workbench shows (offsets, heading path, hashes) and, for
documents with pages, slides or rows, `location` (its label, "pp. 3–4") and `locationSpan` (unit, first, last,
sheet, ocr: whether some of it was read by OCR) and, for a Q&A pair's chunks, `searchText` (its question, what
it is embedded and BM25-indexed by: records.search_text)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np

from ...dictionary import with_aliases
from ...errors import RagError, StoreError
from ...records import Chunk, Document, NewVersion, SearchHit, StoredChunk, search_text
from ...scope import PROVENANCE_KEY, Labels, document_labels, label_value
from ...text import fold


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def chunk_row_id(doc_id: str, version: str, chunk_index: int) -> str:
    digest = hashlib.sha256(f"{doc_id}\x00{version}\x00{chunk_index}".encode()).hexdigest()
    return digest[:32]


def stored_chunk(doc: Document, chunk: Chunk, version: str, total: int, ingested_at: str,
                 labels: Labels | None = None) -> StoredChunk:
    """Chunk `chunk` of `doc` as version `version` stores it (`total`: chunks in that version; `labels`: the
    document's front matter and tags, carried with the built-in labels for metadata filters)."""
    metadata = {
        "_source": doc.doc_id, "_extension": doc.extension, "_file_name": doc.file_name,
        "chunkIndex": chunk.chunk_index, "totalChunks": total, "title": chunk.title,
        "docId": doc.doc_id, "headingPath": chunk.heading_path_text, "start": chunk.start, "end": chunk.end,
        "overlapChars": chunk.overlap_chars, "docHash": doc.content_hash,
        "chunkHash": hashlib.sha256(chunk.text.encode()).hexdigest(), "ingestedAt": ingested_at,
        "version": version,
    }
    if chunk.search_text:  # a Q&A pair: searched by its question (records.search_text)
        metadata["searchText"] = chunk.search_text
    if chunk.location is not None:  # pages, slides or rows (documents with places): shown with hits and cited
        metadata["location"] = chunk.location.label
        metadata["locationSpan"] = chunk.location.to_dict()
    own = document_labels(doc.doc_id, doc.extension, ingested_at, labels)
    return StoredChunk(id=chunk_row_id(doc.doc_id, version, chunk.chunk_index), doc_id=doc.doc_id,
                       chunk_index=chunk.chunk_index, content=chunk.text, source=doc.doc_id, title=chunk.title[:300],
                       version=version, metadata=with_provenance(metadata, own), labels=own)


def with_bm25_text(row: Mapping[str, Any], dictionary: Sequence[str] = ()) -> dict[str, Any]:
    """A chunk row as the collection stores it: with `bm25_text`, what it is searched by (records.search_text: its
    `content`, or a Q&A pair's question) folded to Simplified Chinese (text.fold), which is what the BM25
    function analyses (schema layout 4), and its metadata's `sourceUrl` from its labels (`with_provenance`). Every
    writer of chunk rows goes through here (ingest, chunk edits, relabelling, migration), so the fields never
    disagree. `dictionary`: the collection's BM25 dictionary, whose terms' aliases are added (retrieval.dictionary)."""
    metadata = with_provenance(row.get("metadata") or {}, row.get("labels") or ())
    return {**row, "metadata": metadata,
            "bm25_text": fold(with_aliases(search_text(row["content"], metadata), dictionary))}


def with_provenance(metadata: Mapping[str, Any], labels: Sequence[str]) -> dict[str, Any]:
    """`metadata` with `sourceUrl`: its document's `source_url` label (scope.PROVENANCE_KEY, what a source's sync
    tags), so a hit links to where a person opens the document without a search returning the labels (a column
    pymilvus decodes in every hit: store.milvus.search); without that label, without the key."""
    out = {k: v for k, v in metadata.items() if k != "sourceUrl"}
    if url := label_value(labels, PROVENANCE_KEY):
        out["sourceUrl"] = url
    return out


def search_hit(chunk: StoredChunk, score: float, channel: str, rank: int) -> SearchHit:
    """A search's view of a stored chunk: its metadata plus the top-level fields, and where it ranked."""
    metadata: dict[str, Any] = dict(chunk.metadata or {})
    for name in ("doc_id", "chunk_index", "source", "title", "version"):
        metadata.setdefault(name, getattr(chunk, name))
    return SearchHit(id=chunk.id, score=score, content=chunk.content, metadata=metadata,
                     channels={channel: (rank, score)})


def check_new_versions(items: Sequence[NewVersion], dim: int) -> None:
    """Refuse a batch that cannot be written whole, before anything is written."""
    doc_ids = [item.doc.doc_id for item in items]
    if len(set(doc_ids)) != len(doc_ids):
        raise StoreError("replace_documents: a document appears twice in one batch.")
    for item in items:
        if len(item.chunks) != len(item.vectors):
            raise StoreError(f"{item.doc.doc_id}: {len(item.chunks)} chunks but {len(item.vectors)} vectors.")
        if not item.chunks:
            raise StoreError(f"{item.doc.doc_id}: nothing to index (no chunks).")
        try:
            document_labels(item.doc.doc_id, item.doc.extension, utc_now(), item.labels)
        except RagError as exc:
            raise StoreError(str(exc)) from None
        shape = np.shape(item.vectors)
        if len(shape) != 2 or shape[1] != dim:
            raise StoreError(f"{item.doc.doc_id}: vectors of shape {shape}, but the store holds {dim}-d vectors.")
