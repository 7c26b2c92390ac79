"""An in-memory KnowledgeSearchPort: the fake that passes the same contract as MilvusSearchPort
(tests/contracts/search_port.py), for fast tests of everything above the port (the lookup path, the
rerank stage, the "why wasn't it retrieved?" explanation, pages, routes) without Milvus or a model.

Channels: `bm25` is Okapi BM25 (k1 1.2, b 0.75) over lower-cased words, CJK characters counting as
words; `dense` is the cosine of hashed character-trigram counts: deterministic, no model, and it scores
every chunk (as a dense channel does). Hybrid fuses them with the same code as MilvusSearchPort.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from ..chunking import chunk_text
from ..errors import RetrievalError
from ..records import Chunk, SearchHit, SearchOptions, SearchResult, StoredChunk
from .ports import fuse

_TOKEN = re.compile(r"[\u3400-\u9fff]|[^\W_]+", re.UNICODE)
_DIM = 256


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def _trigram_vector(text: str) -> np.ndarray:
    vector = np.zeros(_DIM, dtype=np.float32)
    flat = " ".join(text.lower().split())
    for i in range(max(1, len(flat) - 2)):
        digest = hashlib.blake2b(flat[i:i + 3].encode(), digest_size=4).digest()
        vector[int.from_bytes(digest, "little") % _DIM] += 1.0
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm else vector


@dataclass(frozen=True)
class _Row:
    id: str
    doc_id: str
    chunk: Chunk
    terms: Counter
    vector: np.ndarray

    def metadata(self) -> dict[str, Any]:
        c = self.chunk
        return {"docId": self.doc_id, "chunkIndex": c.chunk_index, "_source": self.doc_id, "title": c.title,
                "headingPath": c.heading_path_text, "start": c.start, "end": c.end, "doc_id": self.doc_id,
                "chunk_index": c.chunk_index, "source": self.doc_id}


class _Index:
    """The chunks and their channel representations, shared by every configured copy of the port."""

    def __init__(self, documents: Mapping[str, Sequence[Chunk]]) -> None:
        self.rows = [_Row(f"{doc_id}#{c.chunk_index}", doc_id, c, Counter(tokens(c.text)), _trigram_vector(c.text))
                     for doc_id, chunks in sorted(documents.items()) for c in chunks]
        self.df: Counter = Counter(t for row in self.rows for t in row.terms)
        lengths = [sum(row.terms.values()) for row in self.rows]
        self.avg_len = (sum(lengths) / len(lengths)) if lengths else 0.0

    def bm25(self, row: _Row, query_terms: Sequence[str]) -> float:
        n, length = len(self.rows), sum(row.terms.values())
        score = 0.0
        for term in set(query_terms):
            tf = row.terms.get(term, 0)
            if tf:
                idf = math.log(1 + (n - self.df[term] + 0.5) / (self.df[term] + 0.5))
                score += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / self.avg_len))
        return score


def _matches(row: _Row, filters: Mapping[str, Any] | None) -> bool:
    for name, wanted in (filters or {}).items():
        if name not in ("doc_id", "source"):
            raise RetrievalError(f"Cannot filter on {name!r}; filterable fields: doc_id, source.")
        allowed = {wanted} if isinstance(wanted, str) else set(wanted)
        if row.doc_id not in allowed:
            return False
    return True


class InMemorySearchPort:
    """Documents chunked in memory, searched by the channels above; see the module docstring."""

    def __init__(self, documents: Mapping[str, Sequence[Chunk]], options: SearchOptions = SearchOptions(),
                 *, _index: _Index | None = None) -> None:
        self._index = _index or _Index(documents)
        self.options = options

    @classmethod
    def from_texts(cls, texts: Mapping[str, str], max_size: int = 800, overlap: int = 100,
                   options: SearchOptions = SearchOptions()) -> InMemorySearchPort:
        return cls({doc_id: chunk_text(text, max_size, overlap) for doc_id, text in texts.items()}, options)

    def configured(self, options: SearchOptions) -> InMemorySearchPort:
        return self if options == self.options else InMemorySearchPort({}, options, _index=self._index)

    def get_chunks(self, doc_id: str) -> list[StoredChunk]:
        """A document's chunks in order, as a ChunkStore's `get_chunks` returns them."""
        return [StoredChunk(id=r.id, doc_id=r.doc_id, chunk_index=r.chunk.chunk_index, content=r.chunk.text,
                            source=r.doc_id, title=r.chunk.title, version="", metadata=r.metadata())
                for r in self._index.rows if r.doc_id == doc_id]

    def _channel(self, channel: str, query: str, k: int, filters: Mapping[str, Any] | None) -> list[SearchHit]:
        rows = [r for r in self._index.rows if _matches(r, filters)]
        if channel == "bm25":
            terms = tokens(query)
            scored = [(self._index.bm25(r, terms), r) for r in rows]
            scored = [(s, r) for s, r in scored if s > 0]  # full-text search returns matches only
        else:
            vector = _trigram_vector(query)
            scored = [(float(vector @ r.vector), r) for r in rows]
        scored.sort(key=lambda sr: (-sr[0], sr[1].id))
        return [SearchHit(id=r.id, score=s, content=r.chunk.text, metadata=r.metadata(), channels={channel: (i, s)})
                for i, (s, r) in enumerate(scored[:k], start=1)]

    def search(self, query: str, k: int, filters: Mapping[str, Any] | None = None) -> SearchResult:
        if not self._index.rows:
            raise RetrievalError("The knowledge base is empty: ingest documents first.")
        mode = self.options.mode
        ranked = {ch: self._channel(ch, query, k, filters) for ch in ("dense", "bm25") if mode in (ch, "hybrid")}
        hits = fuse(ranked, self.options, k) if mode == "hybrid" else ranked[mode]
        return SearchResult(tuple(hits[:k]), {})
