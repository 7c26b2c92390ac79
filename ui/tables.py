"""Pure table builders (pandas) for the pages: raw hits, evidence, documents, ingest reports.

They take the plain dicts of `LookupResult.to_dict()` (what the agent's tool result carries too), so
the debugger and the chat page build their tables from the same data in the same way. Column names are
identifiers (pages and tests find columns by them); `column_label(column)` is what a person reads above one, in the
user's language (`ui.components.headers` makes the `column_config` of a frame from it). Cell text the app
words (a drop reason, a status, a stage) is in the user's language; codes and keys stay as they are.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, assert_never

import pandas as pd

from rag_core import chunking
from rag_core.ingest import IngestTally
from rag_core.records import Chunk, Fate, IngestReport, IngestStatus, StoredDocument
from rag_core.retrieval.rerank import movement

from .fates import HIT_FATES
from .i18n import N_, t, tn
from .reasons import describe_drop as describe_drop  # where it was first: pages and tests import it from here
from .reasons import location_text, notes, phrase


def column_label(column: str) -> str:
    """The header a person reads above `column` (a column name of the frames here), in the user's language."""
    headers = {
        "rank": t("rank"), "fused #": t("fused #"), "move": t("move"), "rerank score": t("rerank score"),
        "score": t("score"), "evidenceKey": t("evidenceKey"), "where": t("where"), "doc_id": t("doc_id"),
        "chunk": t("chunk"), "dense #": t("dense #"), "bm25 #": t("bm25 #"), "snippet": t("snippet"),
        "status": t("status"), "fate": t("fate"), "hit reasons": t("hit reasons"), "content": t("content"),
        "stage": t("stage"), "ms": t("ms"), "file name": t("file name"), "type": t("type"),
        "size (KB)": t("size (KB)"), "chunks": t("chunks"), "ingested at": t("ingested at"), "file": t("file"),
        "chunk changes": t("chunk changes"), "seconds": t("seconds"), "reason": t("reason"), "notes": t("notes"),
        "knowledge base": t("knowledge base"), "documents": t("documents"), "chunking": t("chunking"),
        "embedder": t("embedder"), "search": t("search"), "created": t("created"), "note": t("note"),
        "target": "", "dense score": t("dense score"), "bm25 score": t("bm25 score"),
        "what happened": t("what happened"), "cross-language": t("cross-language"),
        "access groups": t("access groups"),
    }
    return headers.get(column, column)


def stage_label(stage: str) -> str:
    """A lookup stage of `LookupResult.timings` (its code, e.g. "dense_search") in words."""
    labels = {"embed": t("embed"), "dense_search": t("dense_search"), "bm25_search": t("bm25_search"),
              "hybrid_search": t("hybrid_search"), "fusion": t("fusion"), "search": t("search"),
              "rerank": t("rerank"), "postprocess": t("postprocess"), "projection": t("projection"),
              "total": t("total")}
    return labels.get(stage, stage)


def ingest_status(status: str) -> str:
    """An IngestReport's status (a code: added, replaced, unchanged, failed, skipped) in words."""
    return t(_ingest_words(IngestStatus(status))[0]) if status in frozenset(IngestStatus) else status


def ingest_overall(tally: IngestTally) -> str:
    """An ingest run's overall progress in words: files done of all, chunks embedded of those to embed (once a group
    of files is being embedded), the file being read ("Overall: 3 of 10 files done · 120 of 450 chunks embedded
    (27%)"). Counting files alone read "file 10 of 10 (0%)" while the ten files, all read, were being embedded."""
    parts = [tn("{done} of {n} file done", "{done} of {n} files done", tally.files, done=tally.files_done)]
    if tally.chunks:
        parts.append(t("{embedded:,} of {chunks:,} chunks embedded ({fraction:.0%})", embedded=tally.chunks_embedded,
                       chunks=tally.chunks, fraction=tally.chunk_fraction))
    if tally.reading is not None:
        parts.append(t("reading file {i}", i=tally.reading + 1))
    return t("Overall: {progress}", progress=t(" · ").join(parts))


def ingest_count(status: IngestStatus, n: int) -> str:
    """`n` files of `status`, in words ("3 added")."""
    return t(_ingest_words(status)[1], n=n)


def _ingest_words(status: IngestStatus) -> tuple[str, str]:
    """(its label, its count) as msgids: one exhaustive match, so mypy reports a status missing here."""
    match status:
        case IngestStatus.ADDED:
            return N_("added"), N_("{n} added")
        case IngestStatus.REPLACED:
            return N_("replaced"), N_("{n} replaced")
        case IngestStatus.UNCHANGED:
            return N_("unchanged"), N_("{n} unchanged")
        case IngestStatus.FAILED:
            return N_("failed"), N_("{n} failed")
        case IngestStatus.SKIPPED:
            return N_("skipped"), N_("{n} skipped")
        case _:
            assert_never(status)


def snippet(text: str, limit: int = 160) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


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
        "where": location_text(h.get("location", "")),  # page, slide or rows: "p. 12", "第 12 页"
        "doc_id": h.get("doc_id"),
        "chunk": h.get("chunk_index"),
        "dense #": _channel(h, "dense", "rank"),
        "bm25 #": _channel(h, "bm25", "rank"),
        "cross-language": bool(h.get("cross_language")),
        "snippet": snippet(h.get("content", "")),
        "status": describe_drop(h.get("drop"), short=True),
        "fate": h.get("fate", ""),
    } for h in result.get("raw_hits", [])]
    columns = ["rank", "fused #", "move", "rerank score", "score", "evidenceKey", "where", "doc_id", "chunk",
               "dense #", "bm25 #", "cross-language", "snippet", "status", "fate"]
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
    counts = {str(fate): 0 for fate in HIT_FATES}
    for h in result.get("raw_hits", []):
        counts[h.get("fate", "kept")] = counts.get(h.get("fate", "kept"), 0) + 1
    counts[str(Fate.NO_ACCESS)] = int(result.get("no_access") or 0)  # present only for who may know (an admin)
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
    return pd.DataFrame({"stage": [stage_label(k) for k in names], "ms": [round(float(timings[k]), 2) for k in names]})


def documents_frame(docs: Sequence[StoredDocument],
                    groups: Sequence[Sequence[str] | None] | None = None) -> pd.DataFrame:
    """The document list; `groups`: each document's access groups (Workbench.listed_documents), a column of its own
    when the person sees them (an admin of the knowledge base), left out otherwise."""
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
    columns = ["doc_id", "file name", "type", "size (KB)", "chunks", "ingested at"]
    if groups is not None and any(g is not None for g in groups):
        for row, shown in zip(rows, groups, strict=True):
            row["access groups"] = ", ".join(shown or ())
        columns.append("access groups")
    return pd.DataFrame(rows, columns=columns)


def chunk_changes(report: IngestReport) -> str:
    """"+2 −1 =14": chunks added, removed and unchanged (by content) of a replaced or unchanged document."""
    d = report.diff
    return "" if d is None else f"+{len(d.added)} −{len(d.removed)} ={d.unchanged}"


def ingest_frame(reports: Iterable[IngestReport]) -> pd.DataFrame:
    rows = [{"file": r.path, "doc_id": r.doc_id, "status": ingest_status(r.status), "chunks": r.chunks,
             "chunk changes": chunk_changes(r), "seconds": round(r.seconds, 2), "reason": r.error,
             "notes": t("; ").join(notes(r))} for r in reports]
    return pd.DataFrame(rows, columns=["file", "doc_id", "status", "chunks", "chunk changes", "seconds", "reason",
                                       "notes"])


def knowledge_bases_frame(infos: Sequence[Any]) -> pd.DataFrame:
    """One row per knowledge base (rag_core.kb.manage.KnowledgeBaseInfo)."""
    rows = [
        {
            "knowledge base": t("{name} (default)", name=i.kb.name) if i.default else i.kb.name,
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
        "what happened": phrase(c.get("cause_phrase"), c["cause"]),
    } for c in explanation.get("chunks", [])]
    columns = ["target", "evidenceKey", "dense #", "dense score", "bm25 #", "bm25 score", "fused #", "rank",
               "rerank score", "what happened"]
    frame = pd.DataFrame(rows, columns=columns)
    for col in ("dense #", "bm25 #", "fused #", "rank"):
        frame[col] = frame[col].astype("Int64")
    for col in ("dense score", "bm25 score", "rerank score"):
        frame[col] = frame[col].astype("Float64")
    return frame
