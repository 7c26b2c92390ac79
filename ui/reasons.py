"""The words that come from rag_core, in the user's language: drop reasons and hit fates (codes of
`rag_core.records.DropReason` / `HitTrace.fate`), search modes, and what "why wasn't it retrieved?" and a lookup's
warnings say (`rag_core.retrieval.phrases`: a code and its parameters, rendered here with the catalog). The JSON
keeps its English texts beside the phrases; data saved before phrases existed is shown in that English.

Each code's English text is its msgid, the same words as `rag_core.retrieval.phrases.ENGLISH` (the CLI's
renderer; tests/ui/test_reasons.py keeps them equal). A code this module does not know is shown as the code.
"""

from __future__ import annotations

import functools
import string
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rag_core.records import score_pair
from rag_core.retrieval.phrases import ENGLISH, Phrase, render

from .i18n import language, t


def search_mode_label(mode: str) -> str:
    """A search mode or channel (a code, also in URLs: hybrid, dense, bm25) in words."""
    return {"hybrid": t("hybrid"), "dense": t("dense"), "bm25": t("bm25")}.get(mode, mode)


def fusion_label(fusion: str) -> str:
    """A fusion method (a code stored in the URL) in words."""
    return {"rrf": t("rrf"), "weighted": t("weighted"), "dbsf": t("dbsf")}.get(fusion, fusion)


def _mode(params: Mapping[str, Any]) -> dict[str, Any]:
    return {**params, "mode": search_mode_label(str(params.get("mode")))}


_SAY: dict[str, Callable[..., str]] = {
    "rank": lambda **p: t("#{rank}", **p),
    "rank.no_match": lambda **p: t("no match", **p),
    "rank.beyond": lambda **p: t("beyond #{depth:,}", **p),
    "channel_rank": lambda **p: t("{channel} {rank}", **{**p, "channel": search_mode_label(p["channel"])}),
    "fate.kept": lambda **p: t("in the evidence (#{rank})", **p),
    "fate.doc_cap": lambda **p: t("dropped by the per-document cap ({cap}): {by} came first", **p),
    "fate.beyond_return_n": lambda **p: t("beyond return-n: {return_n} blocks were accepted before it (rank #{rank})",
                                          **p),
    "fate.duplicate": lambda **p: t("duplicate of {key}", **p),
    "fate.disabled": lambda **p: t("disabled: a person left it out of every lookup (`python -m rag_core chunks "
                                   "enable {key}` brings it back)", **p),
    "fate.below_threshold": lambda **p: t("below threshold ({score} < {threshold}) of {mode} search: a "
                                          "score-threshold of at most {at_most} keeps it", **_mode(p)),
    "fate.below_threshold_unscored": lambda **p: t("below_threshold of {mode} search: a score-threshold of at most "
                                                   "{at_most} keeps it", **_mode(p)),
    "fate.no_channel": lambda **p: t("no channel ranks it in the top {depth:,}", **p),
    "fate.beyond_retrieve_k": lambda **p: t("beyond retrieve-k ({retrieve_k}): {ranks}", **p),
    "fate.beyond_retrieve_k_fused": lambda **p: t("beyond retrieve-k ({retrieve_k}) in the fused ranking: {ranks}",
                                                  **p),
    "fix.at_least": lambda **p: t("{setting} ≥ {value}", **p),
    "fix.at_most": lambda **p: t("{setting} ≤ {value}", **p),
    "fix.none": lambda **p: t("no change", **p),
    "answer.not_found": lambda **p: t("The answer text does not occur in {doc} (searched exactly, then ignoring case "
                                      "and whitespace).", **p),
    "answer.split": lambda **p: t("The answer is split across a chunk boundary: chunk-{left_chunk} ends with "
                                  "“{left_text}” and chunk-{right_chunk} goes on with “{right_text}”; no chunk "
                                  "contains all of it (a chunking problem: a larger chunk.overlap keeps it whole).",
                                  **p),
    "answer.in": lambda **p: t("The answer is in {chunks}.", **p),
    "verdict.answer_in": lambda **p: t("the answer in {doc}", **p),
    "verdict.in_evidence": lambda **p: t("{what} is in the evidence: {kept}.", **p),
    "verdict.kept": lambda **p: t("{key} (#{rank})", **p),
    "verdict.no_target": lambda **p: t("{what}: no chunk to look for ({answer})", **p),
    "verdict.split": lambda **p: t("{what} is split across a chunk boundary, so no evidence block holds all of it: "
                                   "a chunking problem (a larger chunk.overlap keeps it whole). Its parts: {parts}.",
                                   **p),
    "verdict.part": lambda **p: t("{key} ({cause})", **p),
    "verdict.not_in_evidence": lambda **p: t("{what} is not in the evidence. Closest: {key}, {cause}.", **p),
    "verdict.fix": lambda **p: t("Smallest change: {fix}, which brings in {target}.", **p),
    "verdict.fix_unverified": lambda **p: t("Smallest change: {fix}, which brings in {target} (not confirmed by a "
                                            "lookup).", **p),
    "verdict.no_setting": lambda **p: t("No setting brings it in: no channel ranks it in the top {depth:,}.", **p),
    "verdict.no_setting_because": lambda **p: t("No setting brings it in: no channel ranks it in the top {depth:,}: "
                                                "{reasons}.", **p),
    "verdict.no_shared_terms": lambda **p: t("the query and the chunk share no terms", **p),
    "verdict.dissimilar": lambda **p: t("the embedder finds them dissimilar (cosine {cosine:.3f})", **p),
    "verdict.dissimilar_at_depth": lambda **p: t("the embedder finds them dissimilar (cosine {cosine:.3f}; "
                                                 "#{depth:,} has {floor:.3f})", **p),
    "verdict.no_width": lambda **p: t("No retrieve-k up to {depth:,} brings it into the fused candidates.", **p),
    "verdict.highest_threshold": lambda **p: t("The highest {mode} score-threshold that keeps it: {highest} "
                                               "(now {now:g}).", **_mode(p)),
    "note.answer_also_in": lambda **p: t("The answer text also occurs in {docs}.", **p),
    "warning.no_document_matches": lambda **p: t("The filter {filter} matches no document (of {documents:,}): nothing "
                                                 "was searched. Check the values (`docs --json` lists each document's "
                                                 "metadata).", **p),
    # {search}: the mode in words; {mode}: its code, in the setting's name
    "warning.all_below_threshold": lambda **p: t("Every hit scored below the {search} score threshold {threshold:g} "
                                                 "(the best {best:.4f}); lower rag.score-threshold.{mode} "
                                                 "(--score-threshold) to see them.",
                                                 search=search_mode_label(str(p.get("mode"))), **p),
    "warning.rerank_skipped": lambda **p: t("Reranking with {reranker} was {error}. The evidence is in the fused "
                                            "order.", **p),
    "warning.rerank_failed": lambda **p: t("Reranking with {reranker} failed ({error}); the evidence is in the fused "
                                           "order.", **p),
}
CODES = frozenset(_SAY)


@functools.cache
def fields(code: str) -> frozenset[str]:
    """The parameters `code` needs (those of its English text)."""
    return frozenset(name for _, name, _, _ in string.Formatter().parse(ENGLISH.get(code, "")) if name)


def _say(code: str, params: Mapping[str, Any]) -> str | None:
    say = _SAY.get(code)
    if say is None or not fields(code) <= params.keys():  # t() fills nothing without parameters: check first
        return None
    try:
        return say(**params)
    except (KeyError, IndexError, ValueError, TypeError):  # parameters that do not fit: the code, not an error
        return None


def _join(kind: str, texts: Sequence[str]) -> str:
    if kind == "sentences":  # Chinese sentences end in "。" and follow each other without a space
        return ("" if language() == "zh" else " ").join(texts)
    return (t(" and ") if kind == "and" else t(", ")).join(texts)


def phrases(data: Mapping[str, Any], field: str) -> list[str]:
    """The texts of a JSON list field (`warnings`, `notes`) in the user's language, from its phrases
    (`warning_phrases`, `note_phrases`); the English texts when the data has none (saved before phrases)."""
    said = data.get(field.removesuffix("s") + "_phrases")
    texts = list(data.get(field) or [])
    if said is None or len(said) != len(texts):
        return texts
    return [phrase(p, text) for p, text in zip(said, texts)]


def phrase(data: Phrase | Mapping[str, Any] | None, fallback: str = "") -> str:
    """A phrase of rag_core (`{"code": ..., "params": ...}` as the JSON has it) in the user's language;
    `fallback` (the JSON's English text) when there is none (a result saved before phrases existed)."""
    if not data:
        return fallback
    return render(data, _say, _join)


# ------------------------------------------------------------------------------------ fates and drop reasons
def fate_label(fate: str) -> str:
    """A hit's fate (`HitTrace.fate`, `ChunkFate.fate`) as a short label: a legend entry, a count."""
    labels = {"kept": t("kept"), "duplicate": t("duplicate"), "doc_cap": t("per-document cap"),
              "beyond_return_n": t("beyond return-n"), "below_threshold": t("below threshold"),
              "disabled": t("disabled"), "beyond_retrieve_k": t("beyond retrieve-k"),
              "no_channel": t("in no channel")}
    return labels.get(fate, fate)


def describe_drop(drop: Mapping[str, Any] | None, *, short: bool = False) -> str:
    """A raw hit's structured drop reason (`raw_hits[i]["drop"]`, `DropReason.to_dict()`) in words; None = kept.
    `short`: for a table column."""
    if not drop:
        return t("kept")
    kind, count = drop.get("kind"), drop.get("count")
    if kind == "duplicate":
        return t("duplicate of {key}", key=drop.get("key"))
    if kind == "doc_cap":
        if short:
            return t("per-document cap ({count})", count=count)
        by = t(", ").join(f"`{k}`" for k in drop.get("by") or ())
        if by:
            return t("per-document cap: {doc} already has {count} ({by})", doc=drop.get("doc_id"), count=count, by=by)
        return t("per-document cap: {doc} already has {count}", doc=drop.get("doc_id"), count=count)
    if kind == "beyond_return_n":
        return t("beyond return-n ({count})", count=count) if count else t("beyond return-n")
    if kind == "below_threshold" and drop.get("score") is not None and drop.get("threshold") is not None:
        score, threshold = score_pair(drop["score"], drop["threshold"])
        return t("below threshold ({score} < {threshold})", score=score, threshold=threshold)
    if kind == "disabled":
        return t("disabled")
    return str(kind)
