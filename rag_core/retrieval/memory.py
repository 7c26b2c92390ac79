"""An in-memory KnowledgeSearchPort for fast tests of everything above the port (the lookup path, the
rerank stage, the "why wasn't it retrieved?" explanation, pages, routes) without Milvus or a model.

It is StoreSearchPort over the in-memory ChunkStore (rag_core.store.memory) with `TrigramEmbedder`, so
the channels are the store fake's: `bm25` is its Okapi BM25 (Traditional Chinese folded to Simplified, as
MilvusStore's), `dense` the cosine of the embedder's vectors, and hybrid fuses them with StoreSearchPort's own
code. It passes the same contract (tests/contracts/search_port.py).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath

import numpy as np

from ..chunking import chunk_text
from ..embedding.base import BatchEmbedder, Role
from ..records import Chunk, Document, NewVersion, SearchOptions
from ..store.memory import InMemoryChunkStore
from .ports import StoreSearchPort

_DIM = 256


def _trigram_vector(text: str) -> np.ndarray:
    vector = np.zeros(_DIM, dtype=np.float32)
    flat = " ".join(text.lower().split())
    for i in range(max(1, len(flat) - 2)):
        digest = hashlib.blake2b(flat[i:i + 3].encode(), digest_size=4).digest()
        vector[int.from_bytes(digest, "little") % _DIM] += 1.0
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm else vector


class TrigramEmbedder(BatchEmbedder):
    """Hashed character-trigram counts, unit length: deterministic, no model, and texts that share
    spelling are near each other, so a dense channel over it ranks like a (weak) real one."""

    name = f"fake:trigram-{_DIM}"

    @property
    def dim(self) -> int:
        return _DIM

    def _embed_batch(self, batch: list[str], role: Role) -> np.ndarray:
        return np.vstack([_trigram_vector(text) for text in batch])


def _document(doc_id: str, text: str) -> Document:
    data = text.encode()
    return Document(doc_id=doc_id, text=text, file_name=PurePosixPath(doc_id).name,
                    extension=PurePosixPath(doc_id).suffix[1:].lower(), size_bytes=len(data),
                    content_hash=hashlib.sha256(data).hexdigest())


class InMemorySearchPort(StoreSearchPort):
    """`documents` (doc_id -> its chunks) indexed in a fresh in-memory store; see the module docstring.

    `texts`: the documents' texts, when known (`from_texts`); otherwise a document's text is its chunks'
    texts, which only its size and hash in `list_documents` show."""

    def __init__(self, documents: Mapping[str, Sequence[Chunk]], options: SearchOptions = SearchOptions(), *,
                 texts: Mapping[str, str] | None = None) -> None:
        embedder = TrigramEmbedder()
        store = InMemoryChunkStore("memory-search")
        store.open(embedder.name, embedder.dim)
        items = [NewVersion(_document(doc_id, (texts or {}).get(doc_id) or "\n\n".join(c.text for c in chunks)),
                            chunks, embedder.embed_documents([c.search_text or c.text for c in chunks]), fingerprint="")
                 for doc_id, chunks in sorted(documents.items()) if chunks]
        if items:
            store.replace_documents(items)
        super().__init__(store, embedder, options)

    @classmethod
    def from_texts(cls, texts: Mapping[str, str], max_size: int = 800, overlap: int = 100,
                   options: SearchOptions = SearchOptions()) -> InMemorySearchPort:
        return cls({doc_id: chunk_text(text, max_size, overlap) for doc_id, text in texts.items()}, options,
                   texts=texts)
