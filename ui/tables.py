"""Pure table builders (pandas) for the pages: raw hits, evidence, documents, ingest reports.

They take the plain dicts of `LookupResult.to_dict()` (what the agent's tool result carries too), so
the debugger and the chat page build their tables from the same data in the same way.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from rag_core import chunking
from rag_core.records import Chunk, IngestReport, StoredDocument, score_pair
from rag_core.retrieval.rerank import movement

FATE_LABELS = {"kept": "kept", "duplicate": "duplicate", "doc_cap": "per-document cap",
               "beyond_return_n": "beyond return-n", "below_threshold": "below threshold", "disabled": "disabled"}


def snippet(text: str, limit: int = 160) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def describe_drop(drop: Mapping[str, Any] | None, *, short: bool = False) -> str:
    """A raw hit's structured drop reason (`raw_hits[i]["drop"]`) in words; None = kept. `short`: for a
    table column."""
    if not drop:
        return "kept"
    kind, count = drop.get("kind"), drop.get("count")
    if kind == "duplicate":
        return f"duplicate of {drop.get('key')}"
    if kind == "doc_cap":
        if short:
            return f"per-document cap ({count})"
        by = ", ".join(f"`{k}`" for k in drop.get("by") or ())
        return f"per-document cap: {drop.get('doc_id')} already has {count}" + (f" ({by})" if by else "")
    if kind == "beyond_return_n":
        return f"beyond return-n ({count})" if count else "beyond return-n"
    if kind == "below_threshold" and drop.get("score") is not None and drop.get("threshold") is not None:
        score, threshold = score_pair(drop["score"], drop["threshold"])
        return f"below threshold ({score} < {threshold})"
    return str(kind)


def _channel(hit: Mapping[str, Any], name: str, part: str) -> Any:
    value = (hit.get("channels") or {}).get(name)
    return value.get(part) if value else None


def reranked(result: Mapping[str, Any]) -> bool:
    """Whether the rerank stage reordered this result (a reranker ran and did not fail)."""
    return bool((result.get("rerank") or {}).get("applied"))


def hits_frame(result: Mapping[str, Any]) -> pd.DataFrame:
    """One row per raw hit, in the order post-processing walked: its rank, its rank before the rerank
    stage and how far the reranker moved it, its rank in each channel, its fate."""
    rows = [{
        "rank": h["rank"],
        "fused #": h.get("fused_rank", h["rank"]),
        "move": movement(h.get("fused_rank", h["rank"]), h["rank"]) if h.get("rerank_score") is not None else "",
        "rerank score": h.get("rerank_score"),
        "score": h["score"],
        "evidenceKey": h["evidence_key"],
        "where": h.get("location", ""),  # page, slide or rows: "p. 12"
        "doc_id": h.get("doc_id"),
        "chunk": h.get("chunk_index"),
        "dense #": _channel(h, "dense", "rank"),
        "bm25 #": _channel(h, "bm25", "rank"),
        "snippet": snippet(h.get("content", "")),
        "status": describe_drop(h.get("drop"), short=True),
        "fate": h.get("fate", ""),
    } for h in result.get("raw_hits", [])]
    columns = ["rank", "fused #", "move", "rerank score", "score", "evidenceKey", "where", "doc_id", "chunk",
               "dense #", "bm25 #", "snippet", "status", "fate"]
    frame = pd.DataFrame(rows, columns=columns)
    frame["rerank score"] = frame["rerank score"].astype("Float64")
    for col in ("dense #", "bm25 #", "chunk", "fused #"):
        frame[col] = frame[col].astype("Int64")
    return frame


def evidence_frame(result: Mapping[str, Any]) -> pd.DataFrame:
    """The final evidence blocks, in order: what post-processing kept."""
    rows = [{
        "evidenceKey": e["evidence_key"],
        "score": e["score"],
        "hit reasons": ", ".join(e.get("hit_reasons", [])),
        "content": snippet(e.get("content", ""), 400),
    } for e in result.get("evidence", [])]
    return pd.DataFrame(rows, columns=["evidenceKey", "score", "hit reasons", "content"])


def fate_counts(result: Mapping[str, Any]) -> dict[str, int]:
    counts = {fate: 0 for fate in FATE_LABELS}
    for h in result.get("raw_hits", []):
        counts[h.get("fate", "kept")] = counts.get(h.get("fate", "kept"), 0) + 1
    return counts


def timings_frame(timings: Mapping[str, float]) -> pd.DataFrame:
    order = [
        "embed",
        "dense_search",
        "bm25_search",
        "hybrid_search",
        "fusion",
        "search",
        "rerank",
        "postprocess",
        "projection",
        "total",
    ]
    names = [k for k in order if k in timings] + [k for k in timings if k not in order]
    return pd.DataFrame({"stage": names, "ms": [round(float(timings[k]), 2) for k in names]})


def documents_frame(docs: Sequence[StoredDocument]) -> pd.DataFrame:
    rows = [
        {
            "doc_id": d.doc_id,
            "file name": d.file_name,
            "type": d.extension,
            "size (KB)": round(d.size_bytes / 1024, 1),
            "chunks": d.chunks,
            "ingested at": d.ingested_at.replace("T", " ").replace("+00:00", " UTC"),
        }
        for d in docs
    ]
    return pd.DataFrame(rows, columns=["doc_id", "file name", "type", "size (KB)", "chunks", "ingested at"])


def chunk_changes(report: IngestReport) -> str:
    """"+2 −1 =14": chunks added, removed and unchanged (by content) of a replaced or unchanged document."""
    d = report.diff
    return "" if d is None else f"+{len(d.added)} −{len(d.removed)} ={d.unchanged}"


def ingest_frame(reports: Iterable[IngestReport]) -> pd.DataFrame:
    rows = [{"file": r.path, "doc_id": r.doc_id, "status": r.status, "chunks": r.chunks,
             "chunk changes": chunk_changes(r), "seconds": round(r.seconds, 2), "reason": r.error,
             "notes": "; ".join(r.notes)} for r in reports]
    return pd.DataFrame(rows, columns=["file", "doc_id", "status", "chunks", "chunk changes", "seconds", "reason",
                                       "notes"])


def knowledge_bases_frame(infos: Sequence[Any]) -> pd.DataFrame:
    """One row per knowledge base (rag_core.kb.manage.KnowledgeBaseInfo)."""
    rows = [
        {
            "knowledge base": i.kb.name + (" (default)" if i.default else ""),
            "documents": i.documents,
            "chunks": i.chunks,
            "chunking": f"{i.kb.settings.get('chunk.max-size')}/{i.kb.settings.get('chunk.overlap')}",
            "embedder": i.embedder or i.kb.settings.get("embedding.provider", ""),
            "search": f"{i.kb.settings.get('rag.search-mode')} k={i.kb.settings.get('rag.retrieve-k')} "
            f"n={i.kb.settings.get('rag.return-n')} cap={i.kb.settings.get('rag.max-chunks-per-document')}",
            "created": (i.kb.created_at or "").replace("T", " ").replace("+00:00", " UTC"),
            "note": i.kb.note,
        }
        for i in infos
    ]
    return pd.DataFrame(rows, columns=["knowledge base", "documents", "chunks", "chunking", "embedder", "search",
                                       "created", "note"])


def chunks_download(name: str, text: str, max_size: int, overlap: int, chunks: Sequence[Chunk]) -> tuple[str, str]:
    """(file name, JSON) for the chunk preview's download: parameters, overlap summary, every chunk."""
    payload = {"doc_id": name, "max_size": max_size, "overlap": overlap, "characters": len(text),
               "summary": chunking.overlap_summary(chunks), "chunks": chunking.chunks_to_json(chunks)}
    stem = name.rsplit("/", 1)[-1].rsplit(".", 1)[0] or "chunks"
    return f"{stem}.chunks.json", json.dumps(payload, ensure_ascii=False, indent=2)


def explain_frame(explanation: Mapping[str, Any]) -> pd.DataFrame:
    """One row per chunk of the expected document (`Explanation.to_dict()`): its channel ranks over the
    whole knowledge base, its ranks in the lookup, and what happened to it."""
    def channel(c: Mapping[str, Any], name: str, part: str) -> Any:
        return (c["channels"].get(name) or {}).get(part)

    rows = [{
        "target": "★" if c["target"] else "",
        "evidenceKey": c["evidence_key"],
        "dense #": channel(c, "dense", "rank"),
        "dense score": channel(c, "dense", "score"),
        "bm25 #": channel(c, "bm25", "rank"),
        "bm25 score": channel(c, "bm25", "score"),
        "fused #": c["fused_rank"],
        "rank": c["rank"],
        "rerank score": c["rerank_score"],
        "what happened": c["cause"],
    } for c in explanation.get("chunks", [])]
    columns = ["target", "evidenceKey", "dense #", "dense score", "bm25 #", "bm25 score", "fused #", "rank",
               "rerank score", "what happened"]
    frame = pd.DataFrame(rows, columns=columns)
    for col in ("dense #", "bm25 #", "fused #", "rank"):
        frame[col] = frame[col].astype("Int64")
    for col in ("dense score", "bm25 score", "rerank score"):
        frame[col] = frame[col].astype("Float64")
    return frame
