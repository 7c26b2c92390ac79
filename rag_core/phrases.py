"""What explain (and a lookup's warnings) say, as codes with parameters (`Phrase`), and their one English rendering.

rag_core never builds a sentence the app shows: it returns a `Phrase` (a code and its parameters), and each edge
renders it. The CLI's human output, the `cause` / `verdict` / `text` / `summary` fields of `--json` and of the
HTTP API are `english(phrase)`; the JSON carries the phrase too (`*_phrase`: `{"code": ..., "params": ...}`), and
the app renders the same codes in the user's language (ui/reasons.py). Parameters are scalars, phrases, or lists
(joined as a list: "a, b"). Three codes only join: `and` ("a and b"), `sentences` (one after the other) and
`list` ("a, b"), each with `items`. A code a renderer does not know is shown as the code, never an error.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

JOINS = ("and", "sentences", "list")  # codes that only join their `items`

# The English text of every code: str.format templates over the phrase's (rendered) parameters.
ENGLISH: Mapping[str, str] = {
    # a chunk's place in one channel over the whole knowledge base (ChannelRank)
    "rank": "#{rank}",
    "rank.no_match": "no match",
    "rank.beyond": "beyond #{depth:,}",
    "channel_rank": "{channel} {rank}",
    # what happened to a chunk in the lookup (ChunkFate.cause)
    "fate.kept": "in the evidence (#{rank})",
    "fate.doc_cap": "dropped by the per-document cap ({cap}): {by} came first",
    "fate.beyond_return_n": "beyond return-n: {return_n} blocks were accepted before it (rank #{rank})",
    "fate.duplicate": "duplicate of {key}",
    "fate.merged": "merged into the block {key}: its chunk touches a better hit's",
    "fate.dropped": "dropped: {reason}",
    "explain.in_block": "not a hit itself, but in the context of {key} (expanded)",
    "fate.disabled": "disabled: a person left it out of every lookup (`python -m rag_core chunks enable {key}` "
                     "brings it back)",
    "fate.below_threshold": "below threshold ({score} < {threshold}) of {mode} search: a score-threshold of at "
                            "most {at_most} keeps it",
    "fate.below_threshold_unscored": "below_threshold of {mode} search: a score-threshold of at most {at_most} "
                                     "keeps it",
    "fate.no_channel": "no channel ranks it in the top {depth:,}",
    "fate.no_access": "hidden from this lookup's user: its document's access groups are none of theirs (no lookup "
                      "setting brings it in)",
    "fate.beyond_retrieve_k": "beyond retrieve-k ({retrieve_k}): {ranks}",
    "fate.beyond_retrieve_k_fused": "beyond retrieve-k ({retrieve_k}) in the fused ranking: {ranks}",
    # the smallest change of settings (Fix.text)
    "fix.at_least": "{setting} ≥ {value}",
    "fix.at_most": "{setting} ≤ {value}",
    "fix.none": "no change",
    # where the expected answer text is (AnswerLocation.describe)
    "answer.not_found": "The answer text does not occur in {doc} (searched exactly, then ignoring case and "
                        "whitespace).",
    "answer.split": "The answer is split across a chunk boundary: chunk-{left_chunk} ends with “{left_text}” and "
                    "chunk-{right_chunk} goes on with “{right_text}”; no chunk contains all of it (a chunking "
                    "problem: a larger chunk.overlap keeps it whole).",
    "answer.in": "The answer is in {chunks}.",
    # the verdict (Explanation.verdict), sentence by sentence
    "verdict.answer_in": "the answer in {doc}",
    "verdict.in_evidence": "{what} is in the evidence: {kept}.",
    "verdict.kept": "{key} (#{rank})",
    "verdict.merged": "{key} (#{rank}, merged into {block})",
    "verdict.in_context": "{what} is not a hit itself, but the agent gets it in the context of {blocks}.",
    "verdict.no_target": "{what}: no chunk to look for ({answer})",
    "verdict.split": "{what} is split across a chunk boundary, so no evidence block holds all of it: a chunking "
                     "problem (a larger chunk.overlap keeps it whole). Its parts: {parts}.",
    "verdict.part": "{key} ({cause})",
    "verdict.not_in_evidence": "{what} is not in the evidence. Closest: {key}, {cause}.",
    "verdict.fix": "Smallest change: {fix}, which brings in {target}.",
    "verdict.fix_unverified": "Smallest change: {fix}, which brings in {target} (not confirmed by a lookup).",
    "verdict.no_setting": "No setting brings it in: no channel ranks it in the top {depth:,}.",
    "verdict.no_setting_because": "No setting brings it in: no channel ranks it in the top {depth:,}: {reasons}.",
    "verdict.no_shared_terms": "the query and the chunk share no terms",
    "verdict.dissimilar": "the embedder finds them dissimilar (cosine {cosine:.3f})",
    "verdict.dissimilar_at_depth": "the embedder finds them dissimilar (cosine {cosine:.3f}; #{depth:,} has "
                                   "{floor:.3f})",
    "verdict.no_width": "No retrieve-k up to {depth:,} brings it into the fused candidates.",
    "verdict.highest_threshold": "The highest {mode} score-threshold that keeps it: {highest} (now {now:g}).",
    # how a document was read (Document.note_phrases, IngestReport.note_phrases)
    "load.qa_sheet": "Q&A sheet: {sheet} ({question} / {answer})",
    "load.qa_table": "Q&A table ({question} / {answer})",
    "load.no_layout": "tables and pages without a text layer were not looked for ({error})",
    "load.no_text_layer": "page {pages} has no text layer and was not read: OCR needs the optional extra "
                          "(pip install \".[ocr]\")",
    "load.no_text_layer_many": "pages {pages} have no text layer and were not read: OCR needs the optional extra "
                               "(pip install \".[ocr]\")",
    "load.ocr_page": "OCR'd page {pages}",
    "load.ocr_pages": "OCR'd pages {pages}",
    "load.read_by_ocr": "read by OCR",
    "load.running_lines_pages": "running headers and footers left out of the text of {pages} of {total} pages: "
                                "{lines}",
    "load.running_lines_slides": "lines repeated on most slides left out of the text of {pages} of {total} slides: "
                                 "{lines}",
    "load.library_warning": "{library} warned {count:,}×: {message}",
    "load.damaged_text": "{count:,} characters could not be read ({share} of the text): private-use or unknown "
                         "characters where the file's letters should be",
    "load.damaged_page": "page {pages}: {count:,} characters could not be read (its fonts map them to private-use or "
                         "unknown characters), so words or signs such as dashes are missing from its text",
    "load.damaged_pages": "pages {pages}: {count:,} characters could not be read (their fonts map them to private-use "
                          "or unknown characters), so words or signs such as dashes are missing from their text",
    "load.damaged_ocr_page": "page {pages} was read by OCR instead: over 5% of its characters could not be read",
    "load.damaged_ocr_pages": "pages {pages} were read by OCR instead: over 5% of their characters could not be read",
    "load.damaged_offer_page": "over 5% of the characters of page {pages} could not be read; to read it by OCR, "
                               "install the optional extra (pip install \".[ocr]\") and ingest the file again",
    "load.damaged_offer_pages": "over 5% of the characters of pages {pages} could not be read; to read them by OCR, "
                                "install the optional extra (pip install \".[ocr]\") and ingest the file again",
    "load.damaged_ocr_limit": "over 5% of the characters of pages {pages} could not be read; they were not read by "
                              "OCR: more than the {limit} pages one PDF may have read by OCR (setting "
                              "loader.ocr-max-pages)",
    # what a reranker had to do (RerankResult.note_phrases); {service} is one of the rerank.service codes
    "rerank.service": "the service",
    "rerank.service.dashscope": "DashScope's",
    "rerank.service.tei": "TEI's default --max-client-batch-size",
    "rerank.limits": "{service} allows {documents:,} documents",
    "rerank.limits_tokens": "{service} allows {documents:,} documents and ~{tokens:,} tokens",
    "rerank.batches": "sent in {requests} requests ({limits} per request)",
    "rerank.query_truncated": "the query was truncated to ~{tokens:,} tokens ({service} limit)",
    "rerank.document_truncated": "{count} document truncated to ~{tokens:,} tokens ({service} per-document limit)",
    "rerank.documents_truncated": "{count} documents truncated to ~{tokens:,} tokens ({service} per-document "
                                  "limit)",
    # why the agent projection left an evidence block out (Projection.reasons)
    "projection.duplicate": "duplicate evidence key",
    "projection.max_items": "projection max items ({max_items})",
    "projection.total_chars": "projection total characters ({max_total_chars})",
    "projection.total_tokens": "projection total tokens ({max_total_tokens})",
    # which model answers in the chat (Agent.describe_phrase); {provider} is a chat.provider code or a name
    "chat.offline": "offline mode: extractive answers from the knowledge base (no chat model configured)",
    "chat.model_via": "{model} via {provider} ({where})",
    "chat.provider.dashscope": "DashScope",
    "chat.provider.openai": "OpenAI-compatible",
    # notes
    "note.answer_also_in": "The answer text also occurs in {docs}.",
    # a lookup's warnings (LookupResult.warning_phrases)
    "warning.no_document_matches": "The filter {filter} matches no document (of {documents:,}): nothing was "
                                   "searched. Check the values (`docs --json` lists each document's metadata).",
    "warning.all_below_threshold": "Every hit scored below the {mode} score threshold {threshold:g} (the best "
                                   "{best:.4f}); lower rag.score-threshold.{mode} (--score-threshold) to see them.",
    "warning.rerank_skipped": "Reranking with {reranker} was {error}. The evidence is in the fused order.",
    "warning.rewrite_failed": "The follow-up question could not be rewritten by {model} ({detail}); it was "
                              "searched as asked.",
    "warning.rewrite_rejected": "{model}'s rewrite of the follow-up question was not used: it {detail}; the question "
                                "was searched as asked.",
    "warning.expand_unavailable": "This search cannot read whole documents, so evidence was not expanded ({expand}) "
                                  "or merged.",
    "warning.rerank_failed": "Reranking with {reranker} failed ({error}); the evidence is in the fused order.",
}
ENGLISH_JOINS = {"and": " and ", "sentences": " ", "list": ", "}


@dataclass(frozen=True)
class Phrase:
    """A code and its parameters: what rag_core says, rendered by each edge in its language."""

    code: str
    params: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "params": {k: _json(v) for k, v in self.params.items()}}

    @property
    def english(self) -> str:
        return english(self)


def joined(code: str, items: Sequence[Any]) -> Phrase:
    """A phrase joining `items` ("and", "sentences" or "list")."""
    return Phrase(code, {"items": tuple(items)})


def _json(value: Any) -> Any:
    if isinstance(value, Phrase):
        return value.to_dict()
    if isinstance(value, list | tuple):
        return [_json(v) for v in value]
    return value


def render(phrase: Phrase | Mapping[str, Any], say: Callable[[str, Mapping[str, Any]], str | None],
           join: Callable[[str, Sequence[str]], str]) -> str:
    """`phrase` (or its `to_dict()`) in words: `say(code, rendered params)` gives the text of a code (None when it
    does not know it: the code is shown), `join(kind, texts)` joins a list ("and", "sentences", "list")."""
    if isinstance(phrase, Phrase):
        code, params = phrase.code, phrase.params
    else:
        code, params = str(phrase.get("code")), phrase.get("params") or {}

    def value(v: Any) -> Any:
        if isinstance(v, Phrase) or (isinstance(v, Mapping) and "code" in v):
            return render(v, say, join)
        if isinstance(v, list | tuple):
            return join("list", [str(value(x)) for x in v])
        return v

    if code in JOINS:
        return join(code, [str(value(x)) for x in params.get("items") or ()])
    text = say(code, {k: value(v) for k, v in params.items()})
    return code if text is None else text


def _say_english(code: str, params: Mapping[str, Any]) -> str | None:
    template = ENGLISH.get(code)
    if template is None:
        return None
    try:
        return template.format(**params)
    except (KeyError, IndexError, ValueError):  # parameters that do not fit: the code, not an error
        return None


def english(phrase: Phrase | Mapping[str, Any]) -> str:
    """The one English rendering (the CLI, the JSON's text fields)."""
    return render(phrase, _say_english, lambda kind, texts: ENGLISH_JOINS.get(kind, ", ").join(texts))
