"""Chunk-level evidence identity: how a search hit becomes a candidate with an `evidence_key`.

The rules, in order (also in the README):

* `doc_id` = metadata `docId`, else `doc_id`, else `_source` (the seed's document path), else `source`.
  Values are converted to text, trimmed, and `\\` becomes `/` (the seed's path normalisation); an
  empty value counts as missing. So a seed-era row with only `_source` still gets a document identity.
* `chunk_index` = metadata `chunkIndex`, else `chunk_index`. Integers, integral floats (`2.0`) and
  digit strings (`" 2 "`) are accepted; booleans, negatives, fractions and other text count as missing.
* `evidence_key`:
  1. `"{doc_id}#chunk-{chunk_index}"` when both are present;
  2. else `"vector:{id}"` when the hit has a vector (row) id;
  3. else `"content:{sha256(content)[:16]}"`, so identical anonymous text still deduplicates.
* `source` = metadata `_source`, else `source`, else the doc_id, else "".
* Scores are "higher is better" everywhere: COSINE and IP similarities and BM25 and fused scores are
  used as they are; an L2 distance d becomes 1 / (1 + d), which keeps the order and lies in (0, 1].
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from .records import Candidate, SearchHit

DOC_ID_KEYS = ("docId", "doc_id", "_source", "source")
CHUNK_INDEX_KEYS = ("chunkIndex", "chunk_index")
SOURCE_KEYS = ("_source", "source")


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, (dict, list, tuple, set)):
        return None
    text = str(value).strip().replace("\\", "/")
    return text or None


def _first_text(metadata: Mapping[str, Any], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        value = _text(metadata.get(key))
        if value is not None:
            return value
    return None


def normalize_chunk_index(value: Any) -> int | None:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        number = value
    elif isinstance(value, float):
        if not math.isfinite(value) or not value.is_integer():
            return None
        number = int(value)
    elif isinstance(value, str) and value.strip().isdigit():
        number = int(value.strip())
    else:
        return None
    return number if number >= 0 else None


def doc_id_of(metadata: Mapping[str, Any]) -> str | None:
    return _first_text(metadata, DOC_ID_KEYS)


def chunk_index_of(metadata: Mapping[str, Any]) -> int | None:
    for key in CHUNK_INDEX_KEYS:
        index = normalize_chunk_index(metadata.get(key))
        if index is not None:
            return index
    return None


def evidence_key(doc_id: str | None, chunk_index: int | None, vector_id: Any, content: str) -> str:
    if doc_id is not None and chunk_index is not None:
        return f"{doc_id}#chunk-{chunk_index}"
    vid = _text(vector_id)
    if vid is not None:
        return f"vector:{vid}"
    return "content:" + hashlib.sha256(content.encode("utf-8")).hexdigest()[:16]


def block_key(doc_id: str, first: int, last: int) -> str:
    """The evidence key of a block of hits merged in one document (retrieval/merge.py): `doc#chunk-3..5` names the
    least and greatest chunk index of the hits it holds; one hit keeps its own key."""
    return f"{doc_id}#chunk-{first}" if first == last else f"{doc_id}#chunk-{first}..{last}"


_KEY_RANGE = re.compile(r"^(?P<doc>.+)#chunk-(?P<first>\d+)(?:\.\.(?P<last>\d+))?$")


def key_range(key: str) -> tuple[str, int, int] | None:
    """(doc_id, first, last) of a chunk's key `doc#chunk-4` (first = last) or a block's `doc#chunk-3..5`; None for
    other keys (`vector:`, `content:`)."""
    m = _KEY_RANGE.match(key or "")
    if m is None:
        return None
    first = int(m["first"])
    return m["doc"], first, int(m["last"] or first)


def higher_is_better(score: float, metric: str) -> float:
    """Turn a raw score of `metric` into one where higher is better."""
    if metric.upper() == "L2":
        return 1.0 / (1.0 + max(0.0, score))
    return score


def to_candidate(hit: SearchHit, rank: int) -> Candidate:
    """Normalise one port hit (1-based `rank`) into a candidate carrying identity."""
    metadata = hit.metadata or {}
    doc_id = doc_id_of(metadata)
    chunk_index = chunk_index_of(metadata)
    return Candidate(
        rank=rank,
        id=_text(hit.id),
        doc_id=doc_id,
        chunk_index=chunk_index,
        evidence_key=evidence_key(doc_id, chunk_index, hit.id, hit.content),
        score=float(hit.score),
        content=hit.content,
        source=_first_text(metadata, SOURCE_KEYS) or doc_id or "",
        metadata=metadata,
        hit_reasons=tuple(hit.channels) or ("dense",),
        channels=dict(hit.channels),
        cross_language=hit.cross_language,
    )


def stored_chunks(doc_id: str, rows: Sequence[Any]) -> list[dict[str, Any]]:
    """A document's stored chunks (`ChunkStore.get_chunks`) as `GET /v1/documents/{doc_id}/chunks` and the MCP
    `read_document_chunks` tool give them: each with its evidence key, position and text."""
    return [{"evidence_key": evidence_key(doc_id, c.chunk_index, c.id, c.content), "chunk_index": c.chunk_index,
             "id": c.id, "title": c.title, "heading_path": c.metadata.get("headingPath", ""),
             "start": c.metadata.get("start"), "end": c.metadata.get("end"), "content": c.content,
             "edited": bool(c.metadata.get("edited")), "added": bool(c.metadata.get("added"))} for c in rows]
