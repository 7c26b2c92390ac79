"""Offline mode: with no chat model configured, answer by quoting the evidence.

The knowledge-base tool runs on the question (the same lookup path as always); the answer is the few
sentences of the returned evidence that best match the question, each quoted with its `[document_id]`.

A sentence's score, with the knowledge base's embedder (the Agent's `embedder`):
  cosine(the question's query vector, the sentence's document vector)
  + WORD_WEIGHT x shared words + RANK_BONUS / (1 + the rank of the evidence item it comes from).
Only the candidate sentences of the returned evidence (a few dozen) are embedded, in one batch. The bundled
embedder is multilingual, so a Chinese question can quote an English runbook and the reverse, and a sentence
sharing no word with the question can be chosen. Such an embedder still scores a sentence in the question's
language above an equally relevant one in the other (and shared words favour it too), so when the evidence
holds sentences in a language none of the chosen quotes is in, the best of them replaces the last quote if
the search ranked its evidence item no lower than that quote's.
Shared words = the share of the question's terms the sentence contains, each weighted by how rare it is among
the candidates (idf); terms come from jieba for Chinese and word tokens for English (lower-cased, stop words
removed), so mixed questions ("CPU 使用率高怎么办") work alike.

The weights were chosen on the sample knowledge base's labelled queries (examples/kb_queries.jsonl): of the 31
whose answer is in the evidence, the sentence holding it was quoted for 29 (by shared words only: 24; of the
8 asked in the other language than the answer's, 7, was 1; of the other 23, 22, was 23) and quoted first for
15 (was 11); on 60 items generated offline from it (questions worded from a chunk, in its language) the
answer was found in 42 offline answers, as by shared words only (`python -m bench.offline_answers`).

Without an embedder (or when it fails: logged, never the turn's failure) only shared words count, with
WORDS_RANK_BONUS for the rank: a sentence sharing none is not quoted, and if none shares any, the best item's
opening is.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import EmbeddingError
from ..languages import CJK, CJK_CLASS, language_of
from ..ports import Embedder
from ..records import Projected
from ..words import terms

log = logging.getLogger(__name__)

MAX_QUOTES = 4
MAX_QUOTE_CHARS = 320
MIN_SENTENCE_CHARS = 12
# Weights of the score with an embedder (cosine similarity counts 1): measured on examples/kb_queries.jsonl.
WORD_WEIGHT = 0.2
RANK_BONUS = 0.16
WORDS_RANK_BONUS = 0.12  # without an embedder

_CJK = re.compile(f"[{CJK_CLASS}]")
_FENCE = re.compile(r"^\s*(```|~~~)")
_LIST_MARK = re.compile(r"^\s*(?:[-*+>]|\d+[.)])\s+")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}")
# Sentence ends: Chinese punctuation anywhere; ". ! ?" only before a space (not "v1.2" or "node.js").
_SENTENCE_END = re.compile(r"(?<=[。！？])|(?<=[.!?])\s+")

@dataclass(frozen=True)
class Quote:
    text: str
    document_id: str
    rank: int  # 0-based rank of the evidence item
    score: float


def sentences(content: str) -> list[str]:
    """Quotable sentences of a chunk: prose and table rows; no code blocks, headings or table rules."""
    out: list[str] = []
    lines = content.splitlines()
    fences = [line.strip() for line in lines if _FENCE.match(line)]
    # A chunk can start inside a code block (its overlap cut into one): an odd number of fences whose first
    # one is bare (a closing fence; opening fences usually name a language) means exactly that.
    in_code = len(fences) % 2 == 1 and fences[0] in ("```", "~~~")
    for raw in lines:
        if _FENCE.match(raw):
            in_code = not in_code
            continue
        line = raw.strip()
        if in_code or not line or line.startswith("#") or _TABLE_RULE.match(line):
            continue
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            line = " | ".join(c for c in cells if c)
            if line:
                out.append(line)
            continue
        line = _LIST_MARK.sub("", line)
        out.extend(s.strip() for s in _SENTENCE_END.split(line) if s and s.strip())
    # Chinese packs more into a character: a six-character sentence ("然后清理日志。") is a whole instruction.
    return [s for s in out if len(s) >= MIN_SENTENCE_CHARS or len(_CJK.findall(s)) >= 5]


def pick_quotes(question: str, items: Sequence[Projected], max_quotes: int = MAX_QUOTES,
                embedder: Embedder | None = None) -> list[Quote]:
    """The sentences of the evidence that best answer the question, best first (the module docstring says how
    they are scored); `embedder` None = by shared words only."""
    pool = [(rank, sentence) for rank, item in enumerate(items) for sentence in sentences(item.content)]
    if not pool:
        return []
    words = _shared_words(question, [sentence for _, sentence in pool])
    similarity = _similarity(question, [sentence for _, sentence in pool], embedder)
    if similarity is not None:
        scored = [Quote(sentence, items[rank].document_id, rank, float(sim) + WORD_WEIGHT * w + RANK_BONUS / (1 + rank))
                  for (rank, sentence), w, sim in zip(pool, words, similarity)]
    else:
        scored = [Quote(sentence, items[rank].document_id, rank, w + WORDS_RANK_BONUS / (1 + rank))
                  for (rank, sentence), w in zip(pool, words) if w > 0]
    if not scored:
        # No shared words (e.g. a paraphrase the dense channel matched): quote the best item's opening.
        rank, sentence = pool[0]  # the pool is in evidence-rank order
        return [Quote(sentence, items[rank].document_id, rank, 0.0)]
    scored.sort(key=lambda q: (-q.score, q.rank))
    unique: dict[str, Quote] = {}  # one quote per sentence (the same line can be in two chunks), best first
    for q in scored:
        unique.setdefault(re.sub(r"\W+", "", q.text.lower()), q)
    ranked = list(unique.values())
    chosen = ranked[:max_quotes]
    return chosen if similarity is None else _each_language(chosen, ranked[max_quotes:])


def _each_language(chosen: list[Quote], rest: Sequence[Quote]) -> list[Quote]:
    """`chosen` with the best sentence of each language of the evidence it lacks in place of its lowest quote
    whose language another quote has, when that sentence's evidence item ranks no lower than the quote's. The
    embedder scores a sentence in the question's language above an equally relevant one in the other (and
    shared words favour it too): an English runbook the search ranked high for a Chinese question would
    otherwise rarely be quoted."""
    tried = {language_of(q.text) for q in chosen}
    for q in rest:  # best first
        language = language_of(q.text)
        if language in tried:
            continue
        tried.add(language)
        languages = [language_of(c.text) for c in chosen]
        spare = [i for i, lang in enumerate(languages) if languages.count(lang) > 1]
        if spare and q.rank <= chosen[spare[-1]].rank:
            del chosen[spare[-1]]
            chosen.append(q)
    return chosen


def _shared_words(question: str, texts: Sequence[str]) -> list[float]:
    """For each text, the idf-weighted share of the question's terms it contains (0 to 1)."""
    wanted = terms(question)
    found = [terms(text) & wanted for text in texts]
    df: dict[str, int] = {}
    for ts in found:
        for t in ts:
            df[t] = df.get(t, 0) + 1
    idf = {t: math.log(1 + len(texts) / df.get(t, 0.5)) for t in wanted}
    total = sum(idf.values()) or 1.0
    return [sum(idf[t] for t in ts) / total for ts in found]


def _similarity(question: str, texts: Sequence[str], embedder: Embedder | None) -> np.ndarray | None:
    """Cosine similarity of the question's query vector to each text's document vector (one batch); None
    without an embedder, or when it fails (logged: the answer then goes by shared words)."""
    if embedder is None or not question.strip():
        return None
    try:
        query = np.asarray(embedder.embed_query(question), dtype=np.float32)
        vectors = np.asarray(embedder.embed_documents(list(texts)), dtype=np.float32)
    except EmbeddingError as exc:
        log.warning("Offline answer: %s could not embed the evidence sentences (%s); they are chosen by shared "
                    "words.", embedder.name, exc)
        return None
    norms = np.linalg.norm(vectors, axis=1) * float(np.linalg.norm(query))
    return np.asarray(vectors @ query / np.maximum(norms, 1e-12))


HINT_EN = ("To get written answers, set DASHSCOPE_API_KEY (DashScope, model qwen-plus), or set chat.provider = "
           "openai with chat.base-url, chat.model and OPENAI_API_KEY for any OpenAI-compatible server.")
HINT_ZH = ("如需由模型生成回答，请设置环境变量 DASHSCOPE_API_KEY（DashScope，默认模型 qwen-plus），或设置 "
           "chat.provider = openai 并配置 chat.base-url、chat.model 与 OPENAI_API_KEY（任意 OpenAI 兼容服务）。")


def compose(question: str, items: Sequence[Projected], max_quotes: int = MAX_QUOTES,
            embedder: Embedder | None = None) -> str:
    """The offline answer: a label, the quotes with their citations, and how to configure a model."""
    zh = language_of(question) == CJK
    quotes = pick_quotes(question, items, max_quotes, embedder)
    if not quotes:
        head = (
            "**离线模式**（未配置对话模型）：知识库中没有找到与问题相关的内容。"
            if zh
            else "**Offline mode** (no chat model configured): the knowledge base has nothing that matches this "
            "question."
        )
        return f"{head}\n\n{HINT_ZH if zh else HINT_EN}"
    head = ("**离线模式**（未配置对话模型）：以下是知识库中与问题最相关的原文摘录，未经模型整理。" if zh else
            "**Offline mode** (no chat model configured): the most relevant sentences from the knowledge base, "
            "quoted as written, not composed by a model.")
    lines = []
    for q in quotes:
        text = q.text if len(q.text) <= MAX_QUOTE_CHARS else q.text[: MAX_QUOTE_CHARS - 1].rstrip() + "…"
        where = f" ({items[q.rank].location})" if items[q.rank].location else ""  # "p. 12": the page to open
        lines.append(f"- “{text}” [{q.document_id}]{where}" if zh else f"- \"{text}\" [{q.document_id}]{where}")
    return f"{head}\n\n" + "\n".join(lines) + f"\n\n{HINT_ZH if zh else HINT_EN}"
