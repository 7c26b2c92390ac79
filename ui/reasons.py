"""The words that come from rag_core, in the user's language: drop reasons and hit fates (codes of
`rag_core.records.DropReason` / `HitTrace.fate`), search modes, and what "why wasn't it retrieved?" and a lookup's
warnings say (`rag_core.phrases`: a code and its parameters, rendered here with the catalog). The JSON
keeps its English texts beside the phrases; data saved before phrases existed is shown in that English.

Each code's English text is its msgid, the same words as `rag_core.phrases.ENGLISH` (the CLI's
renderer; tests/ui/test_reasons.py keeps them equal). A code this module does not know is shown as the code.
"""

from __future__ import annotations

import functools
import re
import string
from collections.abc import Callable, Mapping, Sequence
from typing import Any, assert_never

from rag_core.phrases import ENGLISH, Phrase, render
from rag_core.records import FUSIONS, IMAGE, PAGE, ROW, SEARCH_MODES, SLIDE, Fusion, Location, SearchMode, score_pair

from .fates import fate_label as fate_label  # where it was first: tests import it from here
from .i18n import N_, language, t


def search_mode_label(mode: str) -> str:
    """A search mode or channel (a code, also in URLs: hybrid, dense, bm25) in words."""
    return t(_mode_word(mode)) if mode in SEARCH_MODES else mode


def _mode_word(mode: SearchMode) -> str:  # exhaustive: mypy reports a search mode missing here
    match mode:
        case "hybrid":
            return N_("hybrid")
        case "dense":
            return N_("dense")
        case "bm25":
            return N_("bm25")
        case _:
            assert_never(mode)


def fusion_label(fusion: str) -> str:
    """A fusion method (a code stored in the URL) in words."""
    return t(_fusion_word(fusion)) if fusion in FUSIONS else fusion


def _fusion_word(fusion: Fusion) -> str:  # exhaustive: mypy reports a fusion missing here
    match fusion:
        case "rrf":
            return N_("rrf")
        case "weighted":
            return N_("weighted")
        case "dbsf":
            return N_("dbsf")
        case _:
            assert_never(fusion)


def _mode(params: Mapping[str, Any]) -> dict[str, Any]:
    return {**params, "mode": search_mode_label(str(params.get("mode")))}


_SAY: dict[str, str] = {
    "rank": N_("#{rank}"),
    "rank.no_match": N_("no match"),
    "rank.beyond": N_("beyond #{depth:,}"),
    "channel_rank": N_("{channel} {rank}"),
    "fate.kept": N_("in the evidence (#{rank})"),
    "fate.doc_cap": N_("dropped by the per-document cap ({cap}): {by} came first"),
    "fate.beyond_return_n": N_("beyond return-n: {return_n} blocks were accepted before it (rank #{rank})"),
    "fate.duplicate": N_("duplicate of {key}"),
    "fate.merged": N_("merged into the block {key}: its chunk touches a better hit's"),
    "fate.dropped": N_("dropped: {reason}"),
    "explain.in_block": N_("not a hit itself, but in the context of {key} (expanded)"),
    "fate.disabled": N_("disabled: a person left it out of every lookup (`python -m rag_core chunks "
                        "enable {key}` brings it back)"),
    "fate.below_threshold": N_("below threshold ({score} < {threshold}) of {mode} search: a "
                               "score-threshold of at most {at_most} keeps it"),
    "fate.below_threshold_unscored": N_("below_threshold of {mode} search: a score-threshold of at most "
                                        "{at_most} keeps it"),
    "fate.no_channel": N_("no channel ranks it in the top {depth:,}"),
    "fate.no_access": N_("hidden from this lookup's user: its document's access groups are none of theirs (no "
                         "lookup setting brings it in)"),
    "fate.beyond_retrieve_k": N_("beyond retrieve-k ({retrieve_k}): {ranks}"),
    "fate.beyond_retrieve_k_fused": N_("beyond retrieve-k ({retrieve_k}) in the fused ranking: {ranks}"),
    "fix.at_least": N_("{setting} ≥ {value}"),
    "fix.at_most": N_("{setting} ≤ {value}"),
    "fix.none": N_("no change"),
    "answer.not_found": N_("The answer text does not occur in {doc} (searched exactly, then ignoring case "
                           "and whitespace)."),
    "answer.split": N_("The answer is split across a chunk boundary: chunk-{left_chunk} ends with "
                       "“{left_text}” and chunk-{right_chunk} goes on with “{right_text}”; no chunk "
                       "contains all of it (a chunking problem: a larger chunk.overlap keeps it whole)."),
    "answer.in": N_("The answer is in {chunks}."),
    "verdict.answer_in": N_("the answer in {doc}"),
    "verdict.in_evidence": N_("{what} is in the evidence: {kept}."),
    "verdict.kept": N_("{key} (#{rank})"),
    "verdict.merged": N_("{key} (#{rank}, merged into {block})"),
    "verdict.in_context": N_("{what} is not a hit itself, but the agent gets it in the context of {blocks}."),
    "verdict.no_target": N_("{what}: no chunk to look for ({answer})"),
    "verdict.split": N_("{what} is split across a chunk boundary, so no evidence block holds all of it: "
                        "a chunking problem (a larger chunk.overlap keeps it whole). Its parts: {parts}."),
    "verdict.part": N_("{key} ({cause})"),
    "verdict.not_in_evidence": N_("{what} is not in the evidence. Closest: {key}, {cause}."),
    "verdict.fix": N_("Smallest change: {fix}, which brings in {target}."),
    "verdict.fix_unverified": N_("Smallest change: {fix}, which brings in {target} (not confirmed by a "
                                 "lookup)."),
    "verdict.no_setting": N_("No setting brings it in: no channel ranks it in the top {depth:,}."),
    "verdict.no_setting_because": N_("No setting brings it in: no channel ranks it in the top {depth:,}: "
                                     "{reasons}."),
    "verdict.no_shared_terms": N_("the query and the chunk share no terms"),
    "verdict.dissimilar": N_("the embedder finds them dissimilar (cosine {cosine:.3f})"),
    "verdict.dissimilar_at_depth": N_("the embedder finds them dissimilar (cosine {cosine:.3f}; "
                                      "#{depth:,} has {floor:.3f})"),
    "verdict.no_width": N_("No retrieve-k up to {depth:,} brings it into the fused candidates."),
    "verdict.highest_threshold": N_("The highest {mode} score-threshold that keeps it: {highest} "
                                    "(now {now:g})."),
    "load.qa_sheet": N_("Q&A sheet: {sheet} ({question} / {answer})"),
    "load.qa_table": N_("Q&A table ({question} / {answer})"),
    "load.no_layout": N_("tables and pages without a text layer were not looked for ({error})"),
    "load.no_text_layer": N_("page {pages} has no text layer and was not read: OCR needs the optional extra "
                             "(pip install \".[ocr]\")"),
    "load.no_text_layer_many": N_("pages {pages} have no text layer and were not read: OCR needs the optional "
                                  "extra (pip install \".[ocr]\")"),
    "load.ocr_page": N_("OCR'd page {pages}"),
    "load.ocr_pages": N_("OCR'd pages {pages}"),
    "load.read_by_ocr": N_("read by OCR"),
    "load.running_lines_pages": N_("running headers and footers left out of the text of {pages} of {total} pages: "
                                   "{lines}"),
    "load.running_lines_slides": N_("lines repeated on most slides left out of the text of {pages} of {total} "
                                    "slides: {lines}"),
    "load.library_warning": N_("{library} warned {count:,}×: {message}"),
    "load.damaged_text": N_("{count:,} characters could not be read ({share} of the text): private-use or unknown "
                            "characters where the file's letters should be"),
    "load.damaged_page": N_("page {pages}: {count:,} characters could not be read (its fonts map them to "
                            "private-use or unknown characters), so words or signs such as dashes are missing from "
                            "its text"),
    "load.damaged_pages": N_("pages {pages}: {count:,} characters could not be read (their fonts map them to "
                             "private-use or unknown characters), so words or signs such as dashes are missing "
                             "from their text"),
    "load.damaged_ocr_page": N_("page {pages} was read by OCR instead: over 5% of its characters could not be read"),
    "load.damaged_ocr_pages": N_("pages {pages} were read by OCR instead: over 5% of their characters could not be "
                                 "read"),
    "load.damaged_offer_page": N_("over 5% of the characters of page {pages} could not be read; to read it by OCR, "
                                  "install the optional extra (pip install \".[ocr]\") and ingest the file again"),
    "load.damaged_offer_pages": N_("over 5% of the characters of pages {pages} could not be read; to read them by "
                                   "OCR, install the optional extra (pip install \".[ocr]\") and ingest the file "
                                   "again"),
    "load.damaged_ocr_limit": N_("over 5% of the characters of pages {pages} could not be read; they were not read "
                                 "by OCR: more than the {limit} pages one PDF may have read by OCR (setting "
                                 "loader.ocr-max-pages)"),
    "rerank.service": N_("the service"),
    "rerank.service.dashscope": N_("DashScope's"),
    "rerank.service.tei": N_("TEI's default --max-client-batch-size"),
    "rerank.limits": N_("{service} allows {documents:,} documents"),
    "rerank.limits_tokens": N_("{service} allows {documents:,} documents and ~{tokens:,} tokens"),
    "rerank.batches": N_("sent in {requests} requests ({limits} per request)"),
    "rerank.query_truncated": N_("the query was truncated to ~{tokens:,} tokens ({service} limit)"),
    "rerank.document_truncated": N_("{count} document truncated to ~{tokens:,} tokens ({service} per-document "
                                    "limit)"),
    "rerank.documents_truncated": N_("{count} documents truncated to ~{tokens:,} tokens ({service} "
                                     "per-document limit)"),
    "projection.duplicate": N_("duplicate evidence key"),
    "projection.max_items": N_("projection max items ({max_items})"),
    "projection.total_chars": N_("projection total characters ({max_total_chars})"),
    "projection.total_tokens": N_("projection total tokens ({max_total_tokens})"),
    "chat.offline": N_("offline mode: extractive answers from the knowledge base (no chat model configured)"),
    "chat.model_via": N_("{model} via {provider} ({where})"),
    "chat.provider.dashscope": N_("DashScope"),
    "chat.provider.openai": N_("OpenAI-compatible"),
    "note.answer_also_in": N_("The answer text also occurs in {docs}."),
    "warning.no_document_matches": N_("The filter {filter} matches no document (of {documents:,}): nothing "
                                      "was searched. Check the values (`docs --json` lists each document's "
                                      "metadata)."),
    "warning.all_below_threshold": N_("Every hit scored below the {search} score threshold {threshold:g} "
                                      "(the best {best:.4f}); lower rag.score-threshold.{mode} "
                                      "(--score-threshold) to see them."),
    "warning.rerank_skipped": N_("Reranking with {reranker} was {error}. The evidence is in the fused "
                                 "order."),
    "warning.rewrite_failed": N_("The follow-up question could not be rewritten by {model} ({detail}); it was "
                                 "searched as asked."),
    "warning.rewrite_rejected": N_("{model}'s rewrite of the follow-up question was not used: it {detail}; the "
                                   "question was searched as asked."),
    "warning.expand_unavailable": N_("This search cannot read whole documents, so evidence was not expanded "
                                     "({expand}) or merged."),
    "warning.rerank_failed": N_("Reranking with {reranker} failed ({error}); the evidence is in the fused "
                                "order."),
}
# Parameters worded before they fill a template (a search mode or channel is a code in the phrase).
_WORDED: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "channel_rank": lambda p: {**p, "channel": search_mode_label(p["channel"])},
    "fate.below_threshold": _mode,
    "fate.below_threshold_unscored": _mode,
    "verdict.highest_threshold": _mode,
    # {search}: the mode in words; {mode}: its code, in the setting's name
    "warning.all_below_threshold": lambda p: {**p, "search": search_mode_label(str(p.get("mode")))},
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
        return t(say, **_WORDED.get(code, dict)(dict(params)))
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


def notes(record: Any) -> list[str]:
    """A document's or an ingest report's notes (how it was read) in the user's language, from its `note_phrases`;
    its English `notes` when it has no phrases (a report from an older service)."""
    said, texts = tuple(getattr(record, "note_phrases", ()) or ()), list(getattr(record, "notes", ()) or ())
    if len(said) != len(texts):
        return texts
    return [phrase(p, text) for p, text in zip(said, texts)]


def phrase(data: Phrase | Mapping[str, Any] | None, fallback: str = "") -> str:
    """A phrase of rag_core (`{"code": ..., "params": ...}` as the JSON has it) in the user's language;
    `fallback` (the JSON's English text) when there is none (a result saved before phrases existed)."""
    if not data:
        return fallback
    return render(data, _say, _join)


# ------------------------------------------------------------------------------------ fates and drop reasons
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
    if kind == "merged" and drop.get("by"):
        return t("merged into {key}", key=drop["by"][0])
    if kind == "below_threshold" and drop.get("score") is not None and drop.get("threshold") is not None:
        score, threshold = score_pair(drop["score"], drop["threshold"])
        return t("below threshold ({score} < {threshold})", score=score, threshold=threshold)
    return fate_label(str(kind))  # disabled, and a reason without words of its own here


# ------------------------------------------------------------------------------------ where a chunk is
_UNITS = {PAGE: (N_("p. {span}"), N_("pp. {span}")), SLIDE: (N_("slide {span}"), N_("slides {span}")),
          ROW: (N_("row {span}"), N_("rows {span}"))}


def location_label(location: Location | None) -> str:
    """Where a chunk is in its document (`Location`, whose `label` is the English: "p. 12", "sheet FAQ, row 7"),
    in the user's language, with ", OCR" when its text was read by OCR; "" when unknown."""
    if location is None:
        return ""
    span = str(location.first) if location.first == location.last else f"{location.first}–{location.last}"
    if location.unit == IMAGE:
        where = t("image")
    elif location.unit in _UNITS:
        where = t(_UNITS[location.unit][location.first != location.last], span=span)
        if location.sheet:
            where = t("sheet {sheet}, {where}", sheet=location.sheet, where=where)
    else:
        where = location.label
    return where + (t(", OCR") if location.ocr else "")


_LABEL = re.compile(r"(?:sheet (?P<sheet>.+), )?(?P<unit>pp?\.|slides?|rows?) (?P<first>\d+)(?:–(?P<last>\d+))?")
_UNIT_OF = {"p.": PAGE, "pp.": PAGE, "slide": SLIDE, "slides": SLIDE, "row": ROW, "rows": ROW}


def location_text(label: str) -> str:
    """A stored location label (the English `Location.label` a chunk's metadata keeps: "p. 12", "sheet FAQ, rows
    4–7", "image") in the user's language; a label of another form as it is."""
    if label == "image":
        return location_label(Location(IMAGE, 1, 1))
    m = _LABEL.fullmatch(label or "")
    if m is None:
        return label
    first = int(m["first"])
    return location_label(Location(_UNIT_OF[m["unit"]], first, int(m["last"] or first), sheet=m["sheet"] or ""))


# ------------------------------------------------------------------------------------ a follow-up's rewrite
# The fixed reasons the rewrite stage gives (`Rewrite.detail`: rag_core/retrieval/rewrite.py and stages.py), in the
# user's language; any other detail (a model's error, the facts its rewrite added) is shown as it is, as the
# rewrite warnings do.
REWRITE_DETAILS: Mapping[str, str] = {
    "no earlier question": N_("no earlier question"),
    "it stands alone": N_("it stands alone"),
    "the earlier question has no topic to borrow": N_("the earlier question has no topic to borrow"),
    "the model kept it as asked": N_("the model kept it as asked"),
    "the model's reply was empty": N_("the model's reply was empty"),
    "rewriting is off for this lookup": N_("rewriting is off for this lookup"),
}


def _rewrite_detail(detail: str) -> str:
    return t(REWRITE_DETAILS[detail]) if detail in REWRITE_DETAILS else detail


def rewrite_outcome(rewrite: Mapping[str, Any]) -> str:
    """What the rewrite stage did (a lookup's `rewrite`, `Rewrite.to_dict()`), in words: rewritten (and what the
    offline rewrite borrowed), kept as asked, rewriting off, the model failed or its rewrite was rejected (why)."""
    outcome, by, detail = rewrite.get("outcome"), str(rewrite.get("by") or ""), str(rewrite.get("detail") or "")
    if outcome == "rewritten":
        borrowed = t(", ").join(f"“{b}”" for b in rewrite.get("borrowed") or ())
        if by == "offline":
            return t("rewritten offline: borrowed {borrowed}", borrowed=borrowed) if borrowed else \
                t("rewritten offline")
        return t("rewritten by {model}", model=by)
    if outcome == "kept":
        return t("kept as asked: {why}", why=_rewrite_detail(detail)) if detail else t("kept as asked")
    if outcome == "off":
        return t("rewriting off")
    if outcome == "model_failed":
        return t("model failed: {detail}", detail=_rewrite_detail(detail))
    if outcome == "model_rejected":
        return t("model's rewrite rejected: {detail}", detail=_rewrite_detail(detail))
    return str(outcome)
